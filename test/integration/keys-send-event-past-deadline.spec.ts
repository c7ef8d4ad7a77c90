import { RunContext, Step, Workflow } from '../../src';
import { createApp, freshSchema, ident, sql, waitFor } from '../support';

/**
 * onDuplicate: { sendEvent } to a holder past its workflow timeout (not yet timed out: no worker or
 * sweep got to it): the holder drops the event (docs/keys.md) and the start answers the holder, as
 * for any duplicate it sends to — it does not take the holder for one that changed hands and give
 * up with KeyContendedError.
 */

@Workflow('ksd_holder', { timeout: '1s', onDuplicate: { sendEvent: 'update' } })
class Holder {
  @Step()
  async listen(ctx: RunContext) {
    return ctx.waitForEvent('update');
  }
}

it('a duplicate start whose holder is past its workflow timeout answers the holder; the event is dropped', async () => {
  const schema = freshSchema();
  const worker = await createApp({ schema, workflows: [Holder] });
  const { runId } = await worker.durable.start(Holder, { n: 1 }, { key: 'k' });
  await waitFor(async () => (await worker.durable.getRun(runId))?.status === 'waiting', { timeout: 30_000, message: 'the holder waits' });
  await worker.close(); // no worker, no timeout sweep: the holder stays waiting past its deadline
  const { durable } = await createApp({ schema, workflows: [Holder], options: { worker: false } });
  await waitFor(async () => (await sql(`SELECT 1 FROM ${ident(schema)}.runs WHERE id = $1 AND deadline_at < now()`, [runId])).length === 1, {
    timeout: 30_000,
    message: 'the deadline has passed',
  });
  await expect(durable.start(Holder, { n: 2 }, { key: 'k' })).resolves.toEqual({ runId, outcome: 'sendEvent' });
  expect(await sql(`SELECT count(*)::int AS n FROM ${ident(schema)}.events WHERE run_id = $1`, [runId])).toEqual([{ n: 0 }]);
  expect(await sql(`SELECT details->>'delivery' AS delivery FROM ${ident(schema)}.activity WHERE run_id = $1 AND kind = 'key_duplicate'`, [runId])).toEqual([
    { delivery: 'dropped' },
  ]);
  await createApp({ schema, workflows: [Holder] });
  expect(await durable.waitForRun(runId, { timeout: 30_000 })).toMatchObject({ status: 'failed', error: { name: 'TimeoutError' } });
});
