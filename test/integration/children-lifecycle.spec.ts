/**
 * Child runs over their parent's whole life: a child a compensation started is cancelled when its
 * parent ends (compensated or compensation_failed); a parent's children wait wakes once the children
 * of its call have finished, whatever other children of it are still going (one that an operator
 * retried, replaced by the parent's own retry), and the parent's end cancels those; a child retried
 * while its parent still waits is waited for again.
 */
import { NotCancellableError, RunContext, Step, Workflow } from '../../src';
import { createApp, waitFor } from '../support';

@Workflow('cl_forever')
class Forever {
  @Step()
  async wait(ctx: RunContext) {
    await ctx.waitForInput('never');
  }
}

/** How the next runs of cl_child behave: fail, wait for input 'go', or complete. */
const child = { mode: 'complete' as 'fail' | 'hold' | 'complete' };
@Workflow('cl_child', { retry: { attempts: 1 } })
class Child {
  @Step()
  async run(ctx: RunContext) {
    if (child.mode === 'fail') throw new Error('child failed');
    if (child.mode === 'hold') await ctx.waitForInput('go');
    return 'ok';
  }
}

/** The attempt of `undo` that starts a child (later attempts do not: the compensation then succeeds). */
const comp = { startsChildOn: [1] as number[] };
@Workflow('cl_saga')
class Saga {
  @Step({ compensate: 'undo', retry: { attempts: 2, initialDelay: '300ms', backoff: 'fixed' } })
  async book() {
    return 'booked';
  }

  @Step({ retry: { attempts: 1 } })
  async pay() {
    throw new Error('card declined');
  }

  async undo(ctx: RunContext) {
    if (comp.startsChildOn.includes(ctx.attempt)) await ctx.callWorkflow(Forever);
  }
}

@Workflow('cl_parent', { retry: { attempts: 1 } })
class Parent {
  @Step()
  async call(ctx: RunContext) {
    return ctx.callWorkflow(Child);
  }
}

@Workflow('cl_pair', { retry: { attempts: 1 } })
class Pair {
  @Step()
  async call(ctx: RunContext) {
    return ctx.parallel([{ workflow: Child }, { workflow: Forever }]);
  }
}

const workflows = [Forever, Child, Saga, Parent, Pair];

describe('child runs over their parent’s life', () => {
  it.each([
    ['compensation_failed', [1, 2]],
    ['compensated', [1]],
  ])('a child started by a compensation is cancelled when its parent ends %s; the compensating parent cannot be cancelled', async (end, attempts) => {
    comp.startsChildOn = attempts as number[];
    const { durable } = await createApp({ workflows });
    const { runId } = await durable.start(Saga);
    // the compensation's first attempt started a child, then failed (a compensation cannot wait)
    const kid = await waitFor(async () => {
      const run = await durable.getRun(runId);
      return run?.status === 'compensating' && run.children.length === 1 ? run.children[0] : null;
    });
    await expect(durable.cancel(runId)).rejects.toBeInstanceOf(NotCancellableError);
    expect((await durable.waitForRun(runId, { timeout: 10_000 })).status).toBe(end);
    await waitFor(async () => (await durable.getRun(kid))?.status === 'cancelled', { message: `child ${kid} cancelled` });
    expect((await durable.getRun(kid))!.error).toMatchObject({ code: 'cancelled', parentId: runId });
  });

  it('a retried parent wakes when its new child ends, though the child it replaced (retried by an operator) still waits', async () => {
    child.mode = 'fail';
    const { durable } = await createApp({ workflows });
    const { runId } = await durable.start(Parent);
    const failed = await durable.waitForRun(runId, { timeout: 10_000 });
    expect(failed.status).toBe('failed');
    const [first] = failed.children;
    // the operator retries the failed child, which now waits for input
    child.mode = 'hold';
    await durable.retry(first);
    await waitFor(async () => (await durable.getRun(first))?.waitingFor?.kind === 'input', { message: 'the retried child waits' });
    // then retries the parent: its call starts a new child, which completes
    child.mode = 'complete';
    await durable.retry(runId);
    expect(await durable.waitForRun(runId, { timeout: 10_000 })).toMatchObject({ status: 'completed', result: 'ok' });
    // the replaced child waited meanwhile; the parent's end cancelled it
    expect((await durable.getRun(first))!.error).toMatchObject({ code: 'cancelled', parentId: runId, message: `its parent run ${runId} was completed` });
  });

  it('a child retried while its parent waits is waited for again', async () => {
    child.mode = 'fail';
    const { durable } = await createApp({ workflows });
    const { runId } = await durable.start(Pair);
    const parent = await waitFor(async () => {
      const run = await durable.getRun(runId);
      return run?.status === 'waiting' && run.children.length === 2 ? run : null;
    });
    const kids = await Promise.all(parent.children.map((id) => durable.getRun(id)));
    const failing = kids.find((k) => k!.workflow === 'cl_child')!.id;
    const holding = kids.find((k) => k!.workflow === 'cl_forever')!.id;
    await waitFor(async () => (await durable.getRun(failing))?.status === 'failed');
    child.mode = 'hold';
    await durable.retry(failing);
    await waitFor(async () => (await durable.getRun(failing))?.waitingFor?.kind === 'input');
    // the other child ends: the parent still waits for the retried one
    await durable.provideInput(holding, 'never', 1);
    await waitFor(async () => (await durable.getRun(holding))?.status === 'completed');
    await waitFor(async () => {
      const run = await durable.getRun(runId);
      return run?.status === 'waiting' && run.waitingFor?.kind === 'children';
    });
    await durable.provideInput(failing, 'go', 1);
    expect(await durable.waitForRun(runId, { timeout: 10_000 })).toMatchObject({ status: 'completed', result: ['ok', null] });
  });
});
