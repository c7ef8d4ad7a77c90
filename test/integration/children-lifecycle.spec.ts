/**
 * Child runs over their parent's whole life: a child a compensation started is cancelled when its
 * parent ends (compensated or compensation_failed); a parent's children wait wakes once the children
 * of its call have finished, whatever other children of it are still going (one that an operator
 * retried, replaced by the parent's own retry, which outlives the completed parent); a child retried
 * while its parent still waits is waited for again; a retry by a plain status update (an older
 * version's) starts a new count; a going child deleted counts as failed.
 */
import { DurableService, NotCancellableError, RunContext, Step, Workflow } from '../../src';
import { createApp, Gate, sql, waitFor } from '../support';

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

/**
 * The attempts of `undo` that start a child (the others do not: the compensation then succeeds);
 * its second attempt begins once `second` opens, so the test sees the parent compensating.
 */
const comp = { startsChildOn: [1] as number[], second: new Gate() };
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
    if (ctx.attempt > 1) await comp.second.wait(ctx.signal);
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

@Workflow('cl_twins', { retry: { attempts: 1 } })
class Twins {
  @Step()
  async call(ctx: RunContext) {
    return ctx.parallel([{ workflow: Child }, { workflow: Child }]);
  }
}

@Workflow('cl_timed_twins', { timeout: '1500ms', retry: { attempts: 1 } })
class TimedTwins {
  @Step()
  async call(ctx: RunContext) {
    return ctx.parallel([{ workflow: Child }, { workflow: Child }]);
  }
}

const workflows = [Forever, Child, Saga, Parent, Pair, Twins, TimedTwins];

/** The parent `runId` waits for its `n` children, each of which waits for input: their ids. */
async function holdingChildren(durable: DurableService, runId: string, n: number): Promise<string[]> {
  return waitFor(
    async () => {
      const run = await durable.getRun(runId);
      if (run?.status !== 'waiting' || run.children.length !== n) return null;
      const kids = await Promise.all(run.children.map((id) => durable.getRun(id)));
      return kids.every((k) => k?.waitingFor?.kind === 'input') ? run.children : null;
    },
    { message: `${n} children of ${runId} wait for input` },
  );
}

describe('child runs over their parent’s life', () => {
  it.each([
    ['compensation_failed', [1, 2]],
    ['compensated', [1]],
  ])('a child started by a compensation is cancelled when its parent ends %s; the compensating parent cannot be cancelled', async (end, attempts) => {
    comp.startsChildOn = attempts as number[];
    comp.second = new Gate();
    const { durable } = await createApp({ workflows });
    const { runId } = await durable.start(Saga);
    // the compensation's first attempt started a child, then failed (a compensation cannot wait)
    const kid = await waitFor(async () => {
      const run = await durable.getRun(runId);
      return run?.status === 'compensating' && run.children.length === 1 ? run.children[0] : null;
    });
    await expect(durable.cancel(runId)).rejects.toBeInstanceOf(NotCancellableError);
    comp.second.open();
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
    // the replaced child, retried on purpose, outlives its completed parent
    expect(await durable.getRun(first)).toMatchObject({ status: 'waiting', waitingFor: { kind: 'input' } });
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

  it('a parent retried by a plain status update (an older version of the module) wakes when its refilled children end', async () => {
    child.mode = 'hold';
    const { durable, schema } = await createApp({ workflows });
    const { runId } = await durable.start(TimedTwins);
    await holdingChildren(durable, runId, 2);
    // the parent times out: its end cancels its children, which it no longer counts
    expect(await durable.waitForRun(runId, { timeout: 10_000 })).toMatchObject({ status: 'failed', error: { code: 'timeout' } });
    // an older version's retry: the call's children that did not complete become gaps, then the run
    // goes back to pending, its count of children untouched
    child.mode = 'complete';
    await sql(`UPDATE "${schema}".waits SET children = array_fill(NULL::uuid, ARRAY[cardinality(children)]) WHERE run_id = $1 AND kind = 'children'`, [runId]);
    await sql(
      `UPDATE "${schema}".runs SET status = 'pending', run_at = now(), attempt = 0, error = NULL, finished_at = NULL,
         deadline_at = NULL, node_id = NULL, last_status = NULL WHERE id = $1 AND status = 'failed'`,
      [runId],
    );
    const done = await durable.waitForRun(runId, { timeout: 10_000 });
    expect(done).toMatchObject({ status: 'completed', result: ['ok', 'ok'] });
    expect(done.children).toHaveLength(4);
  });

  it('a going child deleted counts as failed: the parent wakes when its other child ends', async () => {
    child.mode = 'hold';
    const { durable, schema } = await createApp({ workflows });
    const { runId } = await durable.start(Twins);
    const [gone, kept] = await holdingChildren(durable, runId, 2);
    await sql(`DELETE FROM "${schema}".runs WHERE id = $1`, [gone]);
    await durable.provideInput(kept, 'go', 1);
    const failed = await durable.waitForRun(runId, { timeout: 5_000 });
    expect(failed).toMatchObject({ status: 'failed', error: { code: 'child_failed', childId: gone, childStatus: 'deleted' } });
  });
});
