import { RunContext, Step, Workflow } from '../../src';
import { createApp, freshSchema, ident, sql, waitFor } from '../support';

/**
 * A paused workflow's runs that pass their workflow deadline: the timeout sweep times them out
 * while the workflow is paused — a run with compensations to run becomes `compensating` (its
 * compensations wait for the resume, as a compensation waiting for its retry does), so no
 * maintenance pass reads it again as a run past its deadline.
 */

const undone: string[] = [];

/** Its deadline leaves the run time to reach its wait and the test time to pause it before the deadline, on a loaded machine. */
@Workflow('paused_saga', { timeout: '5s' })
class PausedSaga {
  @Step({ compensate: 'undoReserve' })
  async reserve(ctx: RunContext) {
    ctx.put('reserved', true);
  }

  @Step()
  async confirm(ctx: RunContext) {
    await ctx.waitForEvent('confirmed');
  }

  async undoReserve(ctx: RunContext) {
    undone.push(ctx.runId);
  }
}

it('a paused workflow’s run past its deadline turns compensating during the pause, and is compensated once after the resume', async () => {
  const schema = freshSchema();
  const { durable } = await createApp({ schema, workflows: [PausedSaga] });
  const { runId } = await durable.start(PausedSaga, {});
  await waitFor(async () => (await durable.getRun(runId))?.status === 'waiting', { timeout: 30_000, message: 'the run waits for its event' });
  await durable.pause(PausedSaga);
  const timedOut = await waitFor(
    async () => {
      const run = await durable.getRun(runId);
      return run?.status === 'compensating' && run;
    },
    { timeout: 30_000, message: 'the run past its deadline turns compensating while paused' },
  );
  expect(timedOut).toMatchObject({ error: { name: 'TimeoutError' }, context: { reserved: true } });
  // out of the runs the sweep reads (pending or waiting): nothing left for it to read again
  expect(await sql(`SELECT node_id, wake_at FROM ${ident(schema)}.runs WHERE id = $1`, [runId])).toEqual([{ node_id: null, wake_at: null }]);
  expect(undone).toEqual([]);
  await durable.resume(PausedSaga);
  expect(await durable.waitForRun(runId, { timeout: 30_000 })).toMatchObject({ status: 'compensated', error: { name: 'TimeoutError' } });
  expect(undone).toEqual([runId]);
});
