import { isSuspension, RunContext, Step, Workflow } from '../../src';
import { createApp, Gate, waitFor } from '../support';

/**
 * Unbuffered events sent while the step is at its wait (recorded, found nothing) but not yet
 * `waiting`: each is kept, and the run resumes with the newest (of several kept, the newest wins);
 * a run already `waiting` takes the first and drops the later unbuffered ones.
 */

let gate = new Gate();

@Workflow('esw_window')
class AtItsWait {
  @Step()
  async listen(ctx: RunContext) {
    try {
      return await ctx.waitForEvent('go');
    } catch (err) {
      // holds the step at its wait: the run is still running, its wait recorded
      if (isSuspension(err)) await gate.wait(ctx.signal);
      throw err;
    }
  }
}

it('two unbuffered events sent while the step suspends on its wait: both kept, the run resumes with the newer', async () => {
  gate = new Gate();
  const { durable } = await createApp({ workflows: [AtItsWait] });
  const { runId } = await durable.start(AtItsWait);
  await waitFor(() => gate.arrived === 1, { timeout: 30_000, message: 'the step is at its wait' });
  expect(await durable.sendEvent(runId, 'go', { n: 1 })).toBe('kept');
  expect(await durable.sendEvent(runId, 'go', { n: 2 })).toBe('kept');
  gate.open();
  expect(await durable.waitForRun(runId, { timeout: 30_000 })).toMatchObject({ status: 'completed', result: { n: 2 } });
});

it('two unbuffered events sent to a run already waiting: the first is delivered and is its answer, the second dropped', async () => {
  gate = new Gate();
  gate.open();
  const { durable } = await createApp({ workflows: [AtItsWait] });
  const { runId } = await durable.start(AtItsWait);
  await waitFor(async () => (await durable.getRun(runId))?.status === 'waiting', { timeout: 30_000, message: 'the run waits' });
  expect(await durable.sendEvent(runId, 'go', { n: 1 })).toBe('delivered');
  expect(await durable.sendEvent(runId, 'go', { n: 2 })).toBe('dropped');
  expect(await durable.waitForRun(runId, { timeout: 30_000 })).toMatchObject({ status: 'completed', result: { n: 1 } });
});
