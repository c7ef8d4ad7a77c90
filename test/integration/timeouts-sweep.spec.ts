import { RunContext, Step, Workflow } from '../../src';
import { createApp, freshSchema, waitFor } from '../support';
import { testMeter } from '../support/metrics';

/**
 * The maintenance sweep times out a run past its deadline as a worker does when it claims one: the
 * same status (compensating from the same compensation, or failed), the same error (its step
 * named), the same cascade (its children cancelled, each counted once) — whichever of the two gets
 * there first. A paused workflow's runs are only ever reached by the sweep.
 */

const meter = testMeter();
const finished = (workflow: string, status: string) => meter.counter('durable.run.finished', { workflow, status });
const undone: string[] = [];

@Workflow('tsw_saga', { timeout: '5s' })
class Saga {
  @Step({ compensate: 'undoReserve' })
  async reserve(ctx: RunContext) {
    ctx.put('reserved', true);
  }

  @Step()
  async charge() {
    return null;
  }

  @Step()
  async confirm(ctx: RunContext) {
    await ctx.waitForEvent('confirmed');
  }

  async undoReserve(ctx: RunContext) {
    undone.push(ctx.runId);
  }
}

@Workflow('tsw_plain', { timeout: '5s' })
class Plain {
  @Step()
  async first() {
    return null;
  }

  @Step()
  async second(ctx: RunContext) {
    await ctx.waitForEvent('go');
  }
}

@Workflow('tsw_hold')
class Hold {
  @Step()
  async wait(ctx: RunContext) {
    await ctx.waitForInput('never');
  }
}

@Workflow('tsw_parent', { timeout: '5s' })
class Parent {
  @Step({ compensate: 'undoReserve' })
  async reserve() {
    return null;
  }

  @Step()
  async call(ctx: RunContext) {
    return ctx.callWorkflow(Hold);
  }

  async undoReserve(ctx: RunContext) {
    undone.push(ctx.runId);
  }
}

const workflows = [Saga, Plain, Hold, Parent];

it('a paused workflow’s runs past their deadline get the error a worker gives them: TimeoutError naming the step they were at', async () => {
  const { durable } = await createApp({ schema: freshSchema(), workflows });
  const saga = await durable.start(Saga, {});
  const plain = await durable.start(Plain, {});
  for (const { runId } of [saga, plain])
    await waitFor(async () => (await durable.getRun(runId))?.status === 'waiting', { timeout: 30_000, message: 'the run waits' });
  await durable.pause(Saga);
  await durable.pause(Plain);
  const timedOut = (runId: string, status: string) =>
    waitFor(
      async () => {
        const run = await durable.getRun(runId);
        return run?.status === status ? run : undefined;
      },
      { timeout: 30_000, message: `the paused run turns ${status} at its deadline` },
    );
  // as Execution gives a run it claims past its deadline (no attempt of the step was running)
  const sagaRun = await timedOut(saga.runId, 'compensating');
  expect(sagaRun.error).toEqual({ name: 'TimeoutError', code: 'timeout', message: 'workflow "tsw_saga" timed out', step: 'confirm' });
  expect(sagaRun.waitingFor).toBeNull();
  const plainRun = await timedOut(plain.runId, 'failed');
  expect(plainRun.error).toEqual({ name: 'TimeoutError', code: 'timeout', message: 'workflow "tsw_plain" timed out', step: 'second' });
  await durable.resume(Saga);
  expect(await durable.waitForRun(saga.runId, { timeout: 30_000 })).toMatchObject({
    status: 'compensated',
    error: { message: 'workflow "tsw_saga" timed out', step: 'confirm' },
  });
  expect(undone).toContain(saga.runId);
});

it('a paused parent turned compensating by the sweep while it waits for its child: the child is cancelled and counted once, the parent only when compensated', async () => {
  const { durable } = await createApp({ schema: freshSchema(), workflows });
  const before = { child: await finished('tsw_hold', 'cancelled'), compensated: await finished('tsw_parent', 'compensated') };
  const p = await durable.start(Parent, {});
  const [child] = await waitFor(
    async () => {
      const kids = await durable.listRuns({ parentId: p.runId });
      return kids.length === 1 && kids[0].status === 'waiting' && (await durable.getRun(p.runId))?.status === 'waiting' ? kids : undefined;
    },
    { timeout: 30_000, message: 'the parent waits for its waiting child' },
  );
  await durable.pause(Parent);
  await waitFor(async () => (await durable.getRun(p.runId))?.status === 'compensating', { timeout: 30_000, message: 'the parent turns compensating' });
  expect((await durable.getRun(child.id))!.status).toBe('cancelled');
  await waitFor(async () => (await finished('tsw_hold', 'cancelled')) === before.child + 1, { timeout: 15_000, message: 'the child is counted' });
  for (const status of ['failed', 'compensating']) expect(await finished('tsw_parent', status)).toBe(0);
  await durable.resume(Parent);
  expect(await durable.waitForRun(p.runId, { timeout: 30_000 })).toMatchObject({ status: 'compensated', error: { step: 'call' } });
  expect(undone).toContain(p.runId);
  await waitFor(async () => (await finished('tsw_parent', 'compensated')) === before.compensated + 1, { message: 'the parent is counted once' });
  expect(await finished('tsw_hold', 'cancelled')).toBe(before.child + 1);
});
