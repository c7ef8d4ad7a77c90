/**
 * Child runs: ctx.callWorkflow (result, no key inherited, parent waits without a slot, started once
 * per call even when the step runs again, failure → ChildFailedError), ctx.parallel (results in
 * order, first failure after all finish), cancel cascade, RunInfo parentId/children.
 */
import type { Type } from '@nestjs/common';
import { ChildFailedError, isSuspension, RunContext, Step, Workflow } from '../../src';
import { createApp, sql, waitFor } from '../support';

const log: string[] = [];
const caught: unknown[] = [];

@Workflow('ch_double')
class Double {
  @Step()
  async calc(ctx: RunContext<{ n: number; fail?: boolean; slow?: number }>) {
    log.push(`double:${ctx.input.n}`);
    if (ctx.input.slow) await new Promise((r) => setTimeout(r, ctx.input.slow));
    if (ctx.input.fail) throw new Error(`cannot double ${ctx.input.n}`);
    return ctx.input.n * 2;
  }
}

@Workflow('ch_double_once', { retry: { attempts: 1 } })
class DoubleOnce extends Double {}

@Workflow('ch_parent')
class Parent {
  @Step()
  async call(ctx: RunContext<{ n: number }>) {
    log.push('parent:call');
    const doubled = await ctx.callWorkflow<number>(Double, { n: ctx.input.n });
    // a wait after the child: the step runs again; the child is not started a second time
    await ctx.sleep(50);
    return doubled + 1;
  }
}

@Workflow('ch_parent_fail', { retry: { attempts: 3, initialDelay: '50ms' } })
class ParentFail {
  @Step()
  async call(ctx: RunContext) {
    try {
      return await ctx.callWorkflow('ch_double_once', { n: 7, fail: true });
    } catch (err) {
      if (isSuspension(err)) throw err; // the wait for the child: not a failure
      caught.push(err);
      throw err;
    }
  }
}

@Workflow('ch_fanout')
class FanOut {
  @Step()
  async all(ctx: RunContext<{ ns: number[]; failOn?: number }>) {
    return ctx.parallel(ctx.input.ns.map((n) => ({ workflow: 'ch_double_once', input: { n, fail: n === ctx.input.failOn, slow: n === 3 ? 300 : 0 } })));
  }
}

@Workflow('ch_forever')
class Forever {
  @Step()
  async wait(ctx: RunContext) {
    await ctx.waitForInput('never');
  }
}

@Workflow('ch_tree')
class Tree {
  @Step()
  async spawn(ctx: RunContext<{ depth: number }>) {
    if (ctx.input.depth === 0) return ctx.callWorkflow(Forever, {});
    return ctx.callWorkflow(Tree, { depth: ctx.input.depth - 1 });
  }
}

const flaky = { fail: true };
@Workflow('ch_flaky_child', { retry: { attempts: 1 } })
class FlakyChild {
  @Step()
  async run() {
    if (flaky.fail) throw new Error('child not ready');
    return 'ready';
  }
}

@Workflow('ch_retry_parent', { retry: { attempts: 3, initialDelay: '50ms' } })
class RetryParent {
  @Step()
  async call(ctx: RunContext) {
    return ctx.callWorkflow(FlakyChild);
  }
}

const counted = { runs: 0 };
@Workflow('ch_counted', { retry: { attempts: 1 } })
class Counted {
  @Step()
  async run() {
    counted.runs++;
    return 'ok';
  }
}

@Workflow('ch_retry_fanout', { retry: { attempts: 3, initialDelay: '50ms' } })
class RetryFanOut {
  @Step()
  async all(ctx: RunContext) {
    return ctx.parallel([{ workflow: Counted }, { workflow: FlakyChild }, { workflow: Counted }]);
  }
}

/** The workflows the next ch_changed_fanout call starts (a deploy may change them between a failure and its retry). */
const fanout: { calls: Type<unknown>[] } = { calls: [] };
@Workflow('ch_changed_fanout', { retry: { attempts: 1 } })
class ChangedFanOut {
  @Step()
  async all(ctx: RunContext) {
    return ctx.parallel(fanout.calls.map((workflow) => ({ workflow })));
  }
}

@Workflow('ch_then_input')
class ThenInput {
  @Step()
  async call(ctx: RunContext) {
    const doubled = await ctx.callWorkflow<number>(Double, { n: 5 });
    const extra = await ctx.waitForInput<number>('extra');
    return doubled + extra;
  }
}

const workflows = [Double, DoubleOnce, Parent, ParentFail, FanOut, Forever, Tree, FlakyChild, RetryParent, Counted, RetryFanOut, ChangedFanOut, ThenInput];

beforeEach(() => {
  log.length = 0;
  caught.length = 0;
});

describe('child runs', () => {
  it('callWorkflow resolves with the child result; the parent waits without a slot; one child per call', async () => {
    // one slot: the child can only run because the waiting parent holds none
    const { durable } = await createApp({ workflows, concurrency: 1 });
    const { runId } = await durable.start('ch_parent', { n: 20 }, { key: 'p1' });
    const done = await durable.waitForRun(runId, { timeout: 10_000 });
    expect(done.status).toBe('completed');
    expect(done.result).toBe(41);
    expect(done.children).toHaveLength(1);
    const child = await durable.getRun(done.children[0]);
    expect(child).toMatchObject({ status: 'completed', parentId: runId, key: null, holdsKey: false, result: 40, workflow: 'ch_double' });
    // the parent's step ran 3 times (start, after the child, after the sleep); one child was started
    expect(log.filter((l) => l === 'parent:call')).toHaveLength(3);
    expect(log.filter((l) => l.startsWith('double:'))).toEqual(['double:20']);
    expect(await durable.listRuns({ parentId: runId })).toHaveLength(1);
  });

  it('a failed child rejects the call with ChildFailedError (child id and error); the parent fails without retrying', async () => {
    const { durable } = await createApp({ workflows });
    const { runId } = await durable.start('ch_parent_fail');
    const done = await durable.waitForRun(runId, { timeout: 10_000 });
    expect(done.status).toBe('failed');
    const [childId] = done.children;
    expect(caught).toHaveLength(1);
    const err = caught[0] as ChildFailedError;
    expect(err).toBeInstanceOf(ChildFailedError);
    expect(err.code).toBe('child_failed');
    expect(err.childId).toBe(childId);
    expect(err.childStatus).toBe('failed');
    expect(err.childError).toMatchObject({ message: 'cannot double 7' });
    expect(done.error).toMatchObject({
      name: 'ChildFailedError',
      code: 'child_failed',
      childId,
      childStatus: 'failed',
      childError: { message: 'cannot double 7' },
    });
  });

  it('parallel resolves with the results in order once all have finished', async () => {
    const { durable } = await createApp({ workflows });
    const { runId } = await durable.start('ch_fanout', { ns: [1, 2, 3, 4] });
    const done = await durable.waitForRun(runId, { timeout: 10_000 });
    expect(done.status).toBe('completed');
    expect(done.result).toEqual([2, 4, 6, 8]);
    expect(done.children).toHaveLength(4);
  });

  it('parallel: the first failure fails the step after the others finish', async () => {
    const { durable } = await createApp({ workflows });
    const { runId } = await durable.start('ch_fanout', { ns: [1, 2, 3], failOn: 2 });
    const done = await durable.waitForRun(runId, { timeout: 10_000 });
    expect(done.status).toBe('failed');
    const kids = await Promise.all(done.children.map((id) => durable.getRun(id)));
    expect(kids.map((k) => k!.status)).toEqual(['completed', 'failed', 'completed']);
    expect(done.error).toMatchObject({ code: 'child_failed' });
    expect(done.finishedAt!.getTime()).toBeGreaterThanOrEqual(kids[2]!.finishedAt!.getTime());
  });

  it('cancelling a parent cancels its unfinished children, down the tree', async () => {
    const { durable, schema } = await createApp({ workflows });
    const { runId } = await durable.start('ch_tree', { depth: 2 });
    // root → tree → tree → forever (waiting for input)
    await waitFor(async () => (await durable.listRuns({ waitingFor: 'input' })).length === 1, { message: 'leaf waits' });
    // a parent's children are written before its suspension commits: wait for the root too
    const parent = await waitFor(async () => {
      const run = await durable.getRun(runId);
      return run?.status === 'waiting' ? run : null;
    });
    expect(parent.waitingFor).toMatchObject({ kind: 'children' });
    await durable.cancel(runId, { reason: 'stop' });
    const rows = await sql<{ status: string; depth: number }>(
      `with recursive t as (select id, status, 0 as depth from "${schema}".runs where id = $1
         union all select r.id, r.status, t.depth + 1 from "${schema}".runs r join t on r.parent_id = t.id)
       select status, depth from t order by depth`,
      [runId],
    );
    expect(rows).toEqual([
      { status: 'cancelled', depth: 0 },
      { status: 'cancelled', depth: 1 },
      { status: 'cancelled', depth: 2 },
      { status: 'cancelled', depth: 3 },
    ]);
  });

  it('retry of a parent that failed because of its child starts a new child', async () => {
    flaky.fail = true;
    const { durable } = await createApp({ workflows });
    const { runId } = await durable.start('ch_retry_parent');
    const failed = await durable.waitForRun(runId, { timeout: 10_000 });
    expect(failed.status).toBe('failed');
    expect(failed.children).toHaveLength(1);
    flaky.fail = false;
    await durable.retry(runId);
    const done = await durable.waitForRun(runId, { timeout: 10_000 });
    expect(done.status).toBe('completed');
    expect(done.result).toBe('ready');
    expect(done.children).toHaveLength(2);
    const kids = await Promise.all(done.children.map((id) => durable.getRun(id)));
    expect(kids.map((k) => k!.status)).toEqual(['failed', 'completed']);
  });

  it('retry of a parent whose parallel call had a failed child starts that child anew and keeps the completed ones', async () => {
    flaky.fail = true;
    counted.runs = 0;
    const { durable } = await createApp({ workflows });
    const { runId } = await durable.start(RetryFanOut);
    const failed = await durable.waitForRun(runId, { timeout: 10_000 });
    expect(failed.status).toBe('failed');
    expect(counted.runs).toBe(2);
    flaky.fail = false;
    await durable.retry(runId);
    const done = await durable.waitForRun(runId, { timeout: 10_000 });
    expect(done).toMatchObject({ status: 'completed', result: ['ok', 'ready', 'ok'] });
    // the two completed children were not run again; the failed one has a successor
    expect(counted.runs).toBe(2);
    expect(done.children).toHaveLength(4);
    const kids = await Promise.all(done.children.map((id) => durable.getRun(id)));
    expect(kids.map((k) => `${k!.workflow} ${k!.status}`).sort()).toEqual([
      'ch_counted completed',
      'ch_counted completed',
      'ch_flaky_child completed',
      'ch_flaky_child failed',
    ]);
  });

  it('retry of a parent whose call changed since (another workflow at a place) starts anew the children that do not match', async () => {
    flaky.fail = true;
    counted.runs = 0;
    fanout.calls = [Counted, FlakyChild];
    const { durable } = await createApp({ workflows });
    const { runId } = await durable.start(ChangedFanOut);
    expect((await durable.waitForRun(runId, { timeout: 10_000 })).status).toBe('failed');
    flaky.fail = false;
    fanout.calls = [FlakyChild, Counted];
    await durable.retry(runId);
    // the completed Counted child is not taken for the FlakyChild now first: results stay in place
    expect(await durable.waitForRun(runId, { timeout: 10_000 })).toMatchObject({ status: 'completed', result: ['ready', 'ok'] });
    expect(counted.runs).toBe(2);
  });

  it('retry of a parent whose failed child was pruned since starts a new child too', async () => {
    flaky.fail = true;
    const { durable, schema } = await createApp({ workflows });
    const { runId } = await durable.start('ch_retry_parent');
    const failed = await durable.waitForRun(runId, { timeout: 10_000 });
    expect(failed.status).toBe('failed');
    // the child's history is gone (retention), the parent's is not
    await sql(`DELETE FROM "${schema}".runs WHERE id = $1`, [failed.children[0]]);
    flaky.fail = false;
    await durable.retry(runId);
    const done = await durable.waitForRun(runId, { timeout: 10_000 });
    expect(done).toMatchObject({ status: 'completed', result: 'ready' });
    expect(done.children).toHaveLength(1);
    expect(done.children[0]).not.toBe(failed.children[0]);
  });

  it('prune keeps the finished children of a parent that is still going', async () => {
    const { durable } = await createApp({ workflows });
    const { runId } = await durable.start('ch_then_input');
    await waitFor(async () => (await durable.getRun(runId))?.waitingFor?.kind === 'input');
    const [childId] = (await durable.getRun(runId))!.children;
    expect((await durable.getRun(childId))!.status).toBe('completed');
    await durable.prune({ olderThan: 0 });
    expect(await durable.getRun(childId)).not.toBeNull();
    await durable.provideInput(runId, 'extra', 1);
    const done = await durable.waitForRun(runId, { timeout: 10_000 });
    expect(done.result).toBe(11);
    // once the parent has finished, both go
    await durable.prune({ olderThan: 0 });
    expect(await durable.getRun(childId)).toBeNull();
  });

  it('an unknown child workflow fails the step with UnknownWorkflowError', async () => {
    @Workflow('ch_bad')
    class Bad {
      @Step({ retry: { attempts: 1 } })
      async call(ctx: RunContext) {
        return ctx.callWorkflow('no_such_workflow', {});
      }
    }
    const { durable } = await createApp({ workflows: [...workflows, Bad] });
    const { runId } = await durable.start('ch_bad');
    const done = await durable.waitForRun(runId, { timeout: 10_000 });
    expect(done.status).toBe('failed');
    expect(done.error).toMatchObject({ name: 'UnknownWorkflowError' });
  });
});
