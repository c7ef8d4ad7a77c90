/**
 * A batch of transitions in which a key holder ended is followed by a read of what the key trigger
 * did (hand-offs, waiting runs cancelled): the executions of that batch go on without waiting for it.
 */
import { Client } from 'pg';
import { Step, Workflow } from '../../src';
import { countRuns, createApp, databaseUrl, ident, waitFor, waitForLockWait } from '../support';
import { testMeter } from '../support/metrics';

const { counter } = testMeter();

@Workflow('tr_keyed')
class TrKeyed {
  @Step()
  async go() {
    return null;
  }
}

describe('the read-back after a batch in which key holders ended', () => {
  it("does not hold up the executions of the batch: a keyed run's completion is counted while the read waits", async () => {
    const t = await createApp({ workflows: [TrKeyed] });
    const S = ident(t.schema);
    const before = await counter('durable.run.finished', { workflow: 'tr_keyed', status: 'completed' });
    // the read-back (of activity) waits behind this lock; the run's own statements do not read activity
    const lock = new Client({ connectionString: databaseUrl() });
    await lock.connect();
    try {
      await lock.query('BEGIN');
      await lock.query(`LOCK TABLE ${S}.activity IN ACCESS EXCLUSIVE MODE`);
      const r = await t.durable.start('tr_keyed', {}, { key: 'k' });
      await waitFor(async () => (await countRuns(t.schema, "id = $1 AND status = 'completed'", [r.runId])) === 1, {
        timeout: 30_000,
        message: 'the run completed',
      });
      await waitForLockWait([`${S}.activity`, 'WHERE at = $1'], 'the read-back waits for the lock');
      await waitFor(async () => (await counter('durable.run.finished', { workflow: 'tr_keyed', status: 'completed' })) === before + 1, {
        timeout: 15_000,
        message: 'the completion is counted while the read-back waits',
      });
    } finally {
      await lock.query('ROLLBACK').catch(() => undefined);
      await lock.end();
    }
  });
});
