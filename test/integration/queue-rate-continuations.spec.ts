/**
 * A rate limit counts the runs that begin: a run's own later claims (a retry, a wake-up from a
 * wait) go on at once (queue-controls.spec: runs that have not begun wait for room in the window).
 */
import { RunContext, Step, Workflow } from '../../src';
import { createApp } from '../support';

const failedOnce = new Set<string>();

@Workflow('rc_retry', { rateLimit: { limit: 1, period: '1h' }, retry: { attempts: 2, initialDelay: 50, backoff: 'fixed', jitter: false } })
class RetriedOnce {
  @Step()
  async work(ctx: RunContext) {
    if (!failedOnce.has(ctx.runId)) {
      failedOnce.add(ctx.runId);
      throw new Error('fails once');
    }
    return ctx.attempt;
  }
}

@Workflow('rc_nap', { rateLimit: { limit: 1, period: '1h', by: 'key' } })
class Napping {
  @Step()
  async nap(ctx: RunContext) {
    await ctx.sleep('100ms');
  }

  @Step()
  async after() {
    return 'woke';
  }
}

describe('rate limit and a run that has begun', () => {
  it('its retry is not held back by its own begin in the window', async () => {
    const t = await createApp({ workflows: [RetriedOnce] });
    const first = await t.durable.start(RetriedOnce);
    expect(await t.durable.waitForRun(first.runId, { timeout: 15_000 })).toMatchObject({ status: 'completed', result: 2 });
  });

  it('its wake-up from a sleep is not held back by its own begin in its group’s window', async () => {
    const t = await createApp({ workflows: [Napping] });
    const { runId } = await t.durable.start(Napping, {}, { key: 'tenant-a' });
    expect(await t.durable.waitForRun(runId, { timeout: 15_000 })).toMatchObject({ status: 'completed', result: 'woke' });
  });
});
