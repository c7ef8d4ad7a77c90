/**
 * sendEvent inside a caller's transaction found by the ambient transaction manager (module option
 * `transactionManager`): a refused name or payload asks nothing of that transaction, and a send from
 * a REPEATABLE READ transaction made once its wait's timeout passed, while the step marks the wait
 * timed out, is dropped — or fails with SerializationError when the run's row changed since its
 * snapshot — rather than keep an event no wait will read.
 */
import { DataSource, type EntityManager } from 'typeorm';
import { DurableValidationError, RunContext, SerializationError, Step, Workflow } from '../../src';
import { createApp, databaseUrl, raceWaitTimeout, sql, waitForLockWait } from '../support';

@Workflow('ea_timeout')
class TimeoutLate {
  @Step()
  async listen(ctx: RunContext) {
    return ctx.waitForEvent('go', { timeout: 1_500, timeoutValue: { none: true } });
  }
}

/** The caller's transaction the ambient transaction manager answers (none outside a test's transaction). */
let ambient: EntityManager | undefined;
const transactionManager = () => ambient;

/** The caller's own DataSource (not the module's: a send asks which database its transaction is on). */
let ds: DataSource;
beforeEach(async () => {
  ds = await new DataSource({ type: 'postgres', url: databaseUrl() }).initialize();
});
afterEach(async () => {
  ambient = undefined;
  await ds.destroy();
});

/** Runs `fn` in a transaction of the caller's DataSource that the ambient transaction manager answers. */
function inAmbient<T>(fn: (manager: EntityManager) => Promise<T>, isolation: 'READ COMMITTED' | 'REPEATABLE READ' = 'READ COMMITTED'): Promise<T> {
  return ds.transaction(isolation, async (manager) => {
    ambient = manager;
    try {
      return await fn(manager);
    } finally {
      ambient = undefined;
    }
  });
}

describe('sendEvent in an ambient transaction', () => {
  it("a bad name or payload is refused before any statement on the caller's transaction, which goes on", async () => {
    const { durable, schema } = await createApp({ workflows: [TimeoutLate], options: { worker: false, transactionManager } });
    const { runId } = await durable.start(TimeoutLate);
    await inAmbient(async (manager) => {
      const asked = jest.spyOn(manager.queryRunner!, 'query');
      const refused: [string, unknown][] = [
        ['', 1],
        ['go\u0000', 1],
        ['g'.repeat(256), 1],
        ['go', { n: BigInt(1) }],
      ];
      for (const [name, payload] of refused) await expect(durable.sendEvent(runId, name, payload)).rejects.toBeInstanceOf(DurableValidationError);
      expect(asked).not.toHaveBeenCalled();
      asked.mockRestore();
      // the transaction is joined as usual afterwards, and commits the event
      expect(await durable.sendEvent(runId, 'go', { n: 1 }, { buffer: true })).toBe('kept');
    });
    expect(await sql(`SELECT name, payload FROM "${schema}".events WHERE run_id = $1`, [runId])).toEqual([{ name: 'go', payload: { n: 1 } }]);
  });

  it('from a REPEATABLE READ transaction, a send made once its wait timed out, while the step marks it, is dropped or fails with SerializationError, keeping nothing', async () => {
    const { durable, schema } = await createApp({ workflows: [TimeoutLate], options: { transactionManager } });
    await raceWaitTimeout(durable, schema, TimeoutLate, async ({ runId, unblock }) => {
      const sent = inAmbient(async (manager) => {
        // the caller's snapshot: the wait not yet timed out in it
        await manager.query('SELECT 1');
        return durable.sendEvent(runId, 'go', { late: true });
      }, 'REPEATABLE READ').catch((err: unknown) => err);
      await waitForLockWait(['SELECT status, wait_kind, wait_name', schema], 'the send waits for the run the step holds');
      // the step marks its wait timed out and lets the run go; the send, next in line, takes it
      await unblock();
      // the send came after the wait's timeout: the wait is closed whatever its snapshot says; the
      // send fails only when the step's completion changed the run's row before the send locked it
      const outcome = await sent;
      if (outcome instanceof Error) expect(outcome).toMatchObject({ name: SerializationError.name, code: 'serialization_failure' });
      else expect(outcome).toBe('dropped');
      const run = await durable.waitForRun(runId, { timeout: 10_000 });
      expect(run).toMatchObject({ status: 'completed', result: { none: true } });
      expect(await sql(`SELECT 1 FROM "${schema}".events WHERE run_id = $1`, [runId])).toEqual([]);
    });
  });
});
