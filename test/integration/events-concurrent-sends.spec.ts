import { RunContext, Step, Workflow } from '../../src';
import { countRuns, createApp, freshSchema, waitFor } from '../support';

/**
 * Sends that race each other, from several app instances (each its own pool): the same event sent
 * many times at once to one waiting run is delivered once (the others are dropped, or kept and
 * never read with `buffer`), and the wait returns the delivered payload; many runs waiting for one
 * name, each sent its event at once, all resume once with their own.
 */

/** Held by a test until its sends have all returned: a send to a run that has ended is dropped, whatever `buffer` says. */
let sendsDone: Promise<void> = Promise.resolve();

@Workflow('ecs_wait')
class WaitGo {
  @Step({ retry: { attempts: 1 } })
  async listen(ctx: RunContext<{ i: number }>) {
    const got = await ctx.waitForEvent<{ from: number }>('go');
    await sendsDone;
    return got;
  }
}

async function cluster(): Promise<Awaited<ReturnType<typeof createApp>>[]> {
  const schema = freshSchema();
  const first = await createApp({ schema, workflows: [WaitGo], concurrency: 20 });
  const others = await Promise.all([1, 2].map(() => createApp({ schema, workflows: [WaitGo], options: { worker: false } })));
  return [first, ...others];
}

it.each([false, true])(
  'one event sent 30 times at once (buffer: %s) to one waiting run: delivered once, and that payload is what the wait returns',
  async (buffer) => {
    const apps = await cluster();
    const { durable } = apps[0];
    const { runId } = await durable.start(WaitGo, { i: 0 });
    await waitFor(async () => (await durable.getRun(runId))?.status === 'waiting', { timeout: 30_000, message: 'the run waits' });
    let release = (): void => undefined;
    sendsDone = new Promise((resolve) => (release = resolve));
    const outcomes = await Promise.all(Array.from({ length: 30 }, (_, n) => apps[n % apps.length].durable.sendEvent(runId, 'go', { from: n }, { buffer })));
    release();
    const delivered = outcomes.flatMap((o, n) => (o === 'delivered' ? [n] : []));
    expect(delivered).toHaveLength(1);
    expect(new Set(outcomes.filter((o) => o !== 'delivered'))).toEqual(new Set([buffer ? 'kept' : 'dropped']));
    expect(await durable.waitForRun(runId, { timeout: 30_000 })).toMatchObject({ status: 'completed', result: { from: delivered[0] } });
  },
);

it('300 runs waiting for one name, each sent its event at once from three app instances: each resumes once, with its own', async () => {
  const apps = await cluster();
  const { durable } = apps[0];
  const started = await durable.startMany(
    WaitGo,
    Array.from({ length: 300 }, (_, i) => ({ input: { i } })),
  );
  const ids = started.map((r) => (r as { runId: string }).runId);
  await waitFor(async () => (await countRuns(apps[0].schema, `status = 'waiting' AND wait_kind = 'event'`)) === ids.length, {
    timeout: 60_000,
    message: 'every run waits',
  });
  const outcomes = await Promise.all(ids.map((id, i) => apps[i % apps.length].durable.sendEvent(id, 'go', { from: i })));
  expect(outcomes.every((o) => o === 'delivered')).toBe(true);
  const runs = await Promise.all(ids.map((id) => durable.waitForRun(id, { timeout: 60_000 })));
  expect(runs.map((r) => [r.status, r.result])).toEqual(ids.map((_, i) => ['completed', { from: i }]));
}, 180_000);
