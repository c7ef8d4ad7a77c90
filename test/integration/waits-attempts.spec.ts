import { RunContext, Step, Workflow } from '../../src';
import { createApp } from '../support';

/** A wait does not use up retry attempts: each resumed attempt keeps its number, and the retries are all there after many waits. */

const seen: Record<string, number[]> = {};

@Workflow('wa_many_waits')
class ManyWaits {
  @Step({ retry: { attempts: 2, initialDelay: 50 } })
  async work(ctx: RunContext) {
    (seen[ctx.runId] ??= []).push(ctx.attempt);
    for (let i = 0; i < 4; i++) await ctx.sleep(30);
    await ctx.waitForEvent('never', { timeout: 30, timeoutValue: null });
    if (ctx.attempt === 1) throw new Error('fails once, after its waits');
    return ctx.attempt;
  }
}

it('a step that waits five times, then fails once, is retried (attempt 2 of 2) and completes', async () => {
  const { durable } = await createApp({ workflows: [ManyWaits] });
  const { runId } = await durable.start(ManyWaits);
  expect(await durable.waitForRun(runId, { timeout: 30_000 })).toMatchObject({ status: 'completed', result: 2 });
  // the first attempt ran once per wait (and once more after the last), the retry once: no wait recorded twice
  expect(seen[runId]).toEqual([1, 1, 1, 1, 1, 1, 2]);
});
