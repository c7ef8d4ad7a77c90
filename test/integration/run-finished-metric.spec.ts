/**
 * `durable.run.finished` for runs ended outside a worker's own transition: the run waiting behind a
 * key's holder (runAgain) that the key trigger cancels when the reuse policy keeps the key, and runs
 * the timeout sweep fails.
 */
import { RunContext, Step, Workflow } from '../../src';
import { createApp, Gate, waitFor } from '../support';
import { forceStatus } from '../support/keys';
import { testMeter } from '../support/metrics';

const { counter } = testMeter();
const finished = (workflow: string, status: string) => counter('durable.run.finished', { workflow, status });

let gate = new Gate();

@Workflow('rf_once', { reuse: 'afterFailure', retry: { attempts: 1 } })
class RfOnce {
  @Step()
  async go(ctx: RunContext<{ gate?: boolean } | null>) {
    if (ctx.input?.gate) await gate.wait(ctx.signal);
    return ctx.input;
  }
}

@Workflow('rf_timeout', { timeout: '1s', retry: { attempts: 1 } })
class RfTimeout {
  @Step()
  async go() {
    return null;
  }
}

describe('durable.run.finished for runs ended outside the worker', () => {
  beforeEach(() => {
    gate = new Gate();
  });

  it('counts the waiting run the key trigger cancels when the holder completes and reuse keeps its key', async () => {
    const t = await createApp({ workflows: [RfOnce] });
    const before = { cancelled: await finished('rf_once', 'cancelled'), completed: await finished('rf_once', 'completed') };
    const h = await t.durable.start('rf_once', { gate: true }, { key: 'k' });
    await waitFor(async () => (await t.durable.getRun(h.runId))?.status === 'running');
    const w = await t.durable.start('rf_once', {}, { key: 'k', onDuplicate: 'runAgain' });
    expect(w.outcome).toBe('runAgain');
    gate.open();
    // the holder completes; under afterFailure it keeps its key, so the trigger cancels w
    await waitFor(async () => (await t.durable.getRun(w.runId))?.status === 'cancelled', { timeout: 10_000 });
    expect((await t.durable.getRun(w.runId))!.error).toMatchObject({ code: 'key_taken', holderId: h.runId });
    await waitFor(async () => (await finished('rf_once', 'completed')) === before.completed + 1, { message: 'the holder is counted' });
    await waitFor(async () => (await finished('rf_once', 'cancelled')) === before.cancelled + 1, {
      timeout: 5_000,
      message: 'the cancelled waiting run is counted',
    });
    // counted once: later ends of other runs do not count it again
    const next = await t.durable.start('rf_once', {}, { key: 'k2' });
    await t.durable.waitForRun(next.runId, { timeout: 10_000 });
    await waitFor(async () => (await finished('rf_once', 'completed')) === before.completed + 2);
    expect(await finished('rf_once', 'cancelled')).toBe(before.cancelled + 1);
  });

  it('counts the runs the timeout sweep fails', async () => {
    // a worker node that does not run rf_timeout: only its maintenance pass ends the (waiting) run
    const t = await createApp({ workflows: [RfOnce, RfTimeout], options: { worker: { workflows: ['rf_once'] } } });
    const before = await finished('rf_timeout', 'failed');
    const r = await t.durable.start('rf_timeout', {});
    await forceStatus(t.schema, r.runId, 'waiting');
    await waitFor(async () => (await t.durable.getRun(r.runId))?.status === 'failed', { timeout: 15_000 });
    expect((await t.durable.getRun(r.runId))!.error).toMatchObject({ code: 'timeout' });
    await waitFor(async () => (await finished('rf_timeout', 'failed')) === before + 1, {
      timeout: 5_000,
      message: 'the timed-out run is counted',
    });
  });
});
