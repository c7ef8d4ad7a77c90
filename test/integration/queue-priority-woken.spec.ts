/**
 * Priority among due runs holds for runs woken from a wait too: a run keeps its priority for its
 * whole life, so a low-priority run whose sleep ended waits behind due runs of higher priority.
 */
import { RunContext, Step, Workflow } from '../../src';
import { createApp, Gate, waitFor } from '../support';

const order: string[] = [];
const hold = new Gate();

@Workflow('pw_job')
class Job {
  @Step()
  async run(ctx: RunContext<string>) {
    order.push(ctx.input);
    if (ctx.input === 'blocker') await hold.wait();
  }
}

@Workflow('pw_sleeper')
class Sleeper {
  @Step()
  async nap(ctx: RunContext<string>) {
    await ctx.sleep('200ms');
  }

  @Step()
  async run(ctx: RunContext<string>) {
    order.push(ctx.input);
  }
}

afterAll(() => hold.open());

it('a run woken from a sleep is claimed by its priority among the due runs, not before them', async () => {
  // one slot, nothing claimed ahead: each claim takes the first due run
  const t = await createApp({ workflows: [Job, Sleeper], concurrency: 1, options: { worker: { prefetch: 0 } } });
  const low = await t.durable.start(Sleeper, 'low-woken', { priority: -5 });
  await waitFor(async () => (await t.durable.getRun(low.runId))?.status === 'waiting');
  const blocker = await t.durable.start(Job, 'blocker', { priority: 100 });
  await waitFor(() => hold.arrived === 1);
  const highs = [];
  for (const n of [1, 2, 3]) highs.push(await t.durable.start(Job, `high-${n}`, { priority: 10 }));
  // the sleeper's timer has ended while the only slot is held: it is due beside the three
  await waitFor(async () => (await t.durable.getRun(low.runId))!.waitingFor!.until! < new Date(Date.now() - 100));
  hold.open();
  for (const r of [blocker, low, ...highs]) await t.durable.waitForRun(r.runId, { timeout: 20_000 });
  expect(order).toEqual(['blocker', 'high-1', 'high-2', 'high-3', 'low-woken']);
});
