/**
 * `durable.run.finished` for runs ended outside a worker's own transition: the run waiting behind a
 * key's holder (runAgain) that the key trigger cancels when the reuse policy keeps the key, runs
 * the timeout sweep fails, and the runs the database cancels along with another: the unfinished
 * children of a parent that is cancelled (by `cancel` or a `cancelExisting` start), the flow nodes
 * whose dependency failed or was cancelled, and those an append, a rerun or the flow maintenance
 * cancels at once behind a dependency that failed or never appeared. Each once.
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

/** A child that waits (for input that never comes). */
@Workflow('rf_hold')
class RfHold {
  @Step()
  async wait(ctx: RunContext) {
    await ctx.waitForInput('never');
  }
}

/** A child that runs until the gate opens (or its run is cancelled), then notes it returned. */
const gatedReturned: string[] = [];
@Workflow('rf_gated', { retry: { attempts: 1 } })
class RfGated {
  @Step()
  async go(ctx: RunContext<{ gate?: boolean } | null>) {
    if (ctx.input?.gate !== false) await gate.wait(ctx.signal);
    gatedReturned.push(ctx.runId);
    return null;
  }
}

/** A workflow the worker of these specs' apps does not run: its runs stay pending. */
@Workflow('rf_idle')
class RfIdle {
  @Step()
  async go() {
    return null;
  }
}

/** A parent with three children: one running (rf_gated), one waiting (rf_hold), one pending (rf_idle). */
@Workflow('rf_parent', { retry: { attempts: 1 } })
class RfParent {
  @Step()
  async call(ctx: RunContext) {
    return ctx.parallel([{ workflow: RfGated }, { workflow: RfHold }, { workflow: RfIdle }]);
  }
}

/** A keyed parent with one waiting child. */
@Workflow('rf_keyed_parent')
class RfKeyedParent {
  @Step()
  async call(ctx: RunContext) {
    return ctx.callWorkflow(RfHold);
  }
}

/** A parent that waits for its child past its workflow timeout (long enough for the child to reach its wait first, on a loaded machine). */
@Workflow('rf_timed_parent', { timeout: '5s', retry: { attempts: 1 } })
class RfTimedParent {
  @Step()
  async call(ctx: RunContext) {
    return ctx.callWorkflow(RfHold);
  }
}

@Workflow('rf_fail', { retry: { attempts: 1 } })
class RfFail {
  @Step()
  async go() {
    throw new Error('node failed');
  }
}

@Workflow('rf_node')
class RfNode {
  @Step()
  async go() {
    return null;
  }
}

const running = ['rf_once', 'rf_timeout', 'rf_hold', 'rf_gated', 'rf_parent', 'rf_keyed_parent', 'rf_timed_parent', 'rf_fail', 'rf_node'];
const all = [RfOnce, RfTimeout, RfHold, RfGated, RfIdle, RfParent, RfKeyedParent, RfTimedParent, RfFail, RfNode];
const cancelledOf = async (...workflows: string[]) => Promise.all(workflows.map((w) => finished(w, 'cancelled')));

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
    await waitFor(async () => (await t.durable.getRun(w.runId))?.status === 'cancelled', { timeout: 30_000 });
    expect((await t.durable.getRun(w.runId))!.error).toMatchObject({ code: 'key_taken', holderId: h.runId });
    await waitFor(async () => (await finished('rf_once', 'completed')) === before.completed + 1, { message: 'the holder is counted' });
    await waitFor(async () => (await finished('rf_once', 'cancelled')) === before.cancelled + 1, {
      timeout: 15_000,
      message: 'the cancelled waiting run is counted',
    });
    // counted once: later ends of other runs do not count it again
    const next = await t.durable.start('rf_once', {}, { key: 'k2' });
    await t.durable.waitForRun(next.runId, { timeout: 30_000 });
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
      timeout: 15_000,
      message: 'the timed-out run is counted',
    });
  });

  it('counts the children cancelled with their parent (running, waiting and pending), once each', async () => {
    const t = await createApp({ workflows: all, options: { worker: { workflows: running } } });
    const before = await cancelledOf('rf_parent', 'rf_gated', 'rf_hold', 'rf_idle');
    const p = await t.durable.start('rf_parent', {});
    const children = await waitFor(
      async () => {
        const kids = await t.durable.listRuns({ parentId: p.runId });
        const status = Object.fromEntries(kids.map((k) => [k.workflow, k.status]));
        return status.rf_gated === 'running' && status.rf_hold === 'waiting' && status.rf_idle === 'pending' ? kids : undefined;
      },
      { message: 'a running, a waiting and a pending child' },
    );
    await t.durable.cancel(p.runId);
    for (const k of children) expect((await t.durable.getRun(k.id))!.status).toBe('cancelled');
    await waitFor(async () => (await cancelledOf('rf_parent', 'rf_gated', 'rf_hold', 'rf_idle')).every((n, i) => n === before[i] + 1), {
      timeout: 15_000,
      message: 'the parent and each of its children counted cancelled',
    });
    // the running child's step sees its signal abort and returns: its execution no longer owns the
    // run and counts nothing; a later run of its workflow ending does not count it again
    const gated = children.find((k) => k.workflow === 'rf_gated')!;
    await waitFor(() => gatedReturned.includes(gated.id), { message: 'the cancelled child step returned' });
    const completedBefore = await finished('rf_gated', 'completed');
    const next = await t.durable.start('rf_gated', { gate: false });
    await t.durable.waitForRun(next.runId, { timeout: 30_000 });
    await waitFor(async () => (await finished('rf_gated', 'completed')) === completedBefore + 1);
    expect(await cancelledOf('rf_parent', 'rf_gated', 'rf_hold', 'rf_idle')).toEqual(before.map((n) => n + 1));
  });

  it('counts the child cancelled with a parent that a cancelExisting start replaced', async () => {
    const t = await createApp({ workflows: all, options: { worker: { workflows: running } } });
    const before = await cancelledOf('rf_keyed_parent', 'rf_hold');
    const p = await t.durable.start('rf_keyed_parent', {}, { key: 'k' });
    const [child] = await waitFor(async () => {
      const kids = await t.durable.listRuns({ parentId: p.runId });
      return kids.length === 1 && kids[0].status === 'waiting' ? kids : undefined;
    });
    const r = await t.durable.start('rf_keyed_parent', {}, { key: 'k', onDuplicate: 'cancelExisting' });
    expect(r.outcome).toBe('cancelExisting');
    expect((await t.durable.getRun(child.id))!.status).toBe('cancelled');
    await waitFor(async () => (await cancelledOf('rf_keyed_parent', 'rf_hold')).every((n, i) => n === before[i] + 1), {
      timeout: 15_000,
      message: 'the replaced parent and its child counted cancelled',
    });
  });

  it('counts the flow nodes cancelled because a dependency failed, once each', async () => {
    const t = await createApp({ workflows: all, options: { worker: { workflows: running } } });
    const before = { failed: await finished('rf_fail', 'failed'), cancelled: await finished('rf_node', 'cancelled') };
    // a fails: b and d are cancelled, then c (b's dependant), level by level
    const { flowId, runIds } = await t.durable.startFlow(
      t.durable
        .flow()
        .add('a', RfFail)
        .add('b', RfNode, {}, { deps: ['a'] })
        .add('c', RfNode, {}, { deps: ['b'] })
        .add('d', RfNode, {}, { deps: ['a'] }),
    );
    await waitFor(async () => (await t.durable.getRun(runIds.c))?.status === 'cancelled', { timeout: 30_000 });
    const statuses = Object.fromEntries((await t.durable.listRuns({ flowId })).map((r) => [r.name!, r.status]));
    expect(statuses).toEqual({ a: 'failed', b: 'cancelled', c: 'cancelled', d: 'cancelled' });
    await waitFor(async () => (await finished('rf_fail', 'failed')) === before.failed + 1, { message: 'the failed node is counted' });
    await waitFor(async () => (await finished('rf_node', 'cancelled')) === before.cancelled + 3, {
      timeout: 15_000,
      message: 'the three cancelled dependants are counted',
    });
    // once: another run ending does not count them again
    const next = await t.durable.start('rf_node', {});
    await t.durable.waitForRun(next.runId, { timeout: 30_000 });
    expect(await finished('rf_node', 'cancelled')).toBe(before.cancelled + 3);
  });

  it('counts the dependants of a flow node cancelled with cancel', async () => {
    const t = await createApp({ workflows: all, options: { worker: { workflows: running } } });
    const before = { idle: await finished('rf_idle', 'cancelled'), node: await finished('rf_node', 'cancelled') };
    // a stays pending (no worker runs rf_idle) until it is cancelled: b and c go with it
    const { flowId, runIds } = await t.durable.startFlow(
      t.durable
        .flow()
        .add('a', RfIdle)
        .add('b', RfNode, {}, { deps: ['a'] })
        .add('c', RfNode, {}, { deps: ['b'] }),
    );
    await t.durable.cancel(runIds.a);
    const statuses = Object.fromEntries((await t.durable.listRuns({ flowId })).map((r) => [r.name!, r.status]));
    expect(statuses).toEqual({ a: 'cancelled', b: 'cancelled', c: 'cancelled' });
    await waitFor(async () => (await finished('rf_node', 'cancelled')) === before.node + 2, {
      timeout: 15_000,
      message: 'the two cancelled dependants are counted',
    });
    expect(await finished('rf_idle', 'cancelled')).toBe(before.idle + 1);
  });

  it('counts the nodes an append or a rerun cancels at once behind a dependency that had failed', async () => {
    const t = await createApp({ workflows: all, options: { worker: { workflows: running } } });
    const start = await finished('rf_node', 'cancelled');
    const { flowId, runIds } = await t.durable.startFlow(
      t.durable
        .flow()
        .add('a', RfFail)
        .add('b', RfNode, {}, { deps: ['a'] }),
    );
    await waitFor(async () => (await t.durable.getRun(runIds.b))?.status === 'cancelled', { timeout: 30_000, message: 'b is cancelled behind the failed a' });
    // b's count is read back after a's batch has been answered (a may be counted first)
    await waitFor(async () => (await finished('rf_node', 'cancelled')) === start + 1, { timeout: 15_000, message: 'b is counted' });
    const before = start + 1;
    // appended behind the failed a: x, and y behind x, are cancelled in the append's transaction
    const appended = await t.durable.startFlow(
      (await t.durable.appendFlow(flowId)).add('x', RfNode, {}, { deps: ['a'] }).add('y', RfNode, {}, { deps: ['x'] }),
    );
    for (const id of Object.values(appended.runIds)) expect((await t.durable.getRun(id))!.status).toBe('cancelled');
    await waitFor(async () => (await finished('rf_node', 'cancelled')) === before + 2, { message: 'the two appended nodes are counted' });
    // b run again: the fresh b waits for a, which failed, so it is cancelled at once
    const rerun = await t.durable.rerunFlow(flowId, { from: 'b' });
    expect((await t.durable.getRun(rerun.runIds.b))!.status).toBe('cancelled');
    await waitFor(async () => (await finished('rf_node', 'cancelled')) === before + 3, { message: 'the rerun node is counted' });
  });

  it('counts the nodes cancelled behind a dependency that never appeared (checkDeps: false), once each', async () => {
    // nodeTimeout is 1s in the tests: the grace after which the flow maintenance counts the dep deleted
    const t = await createApp({ workflows: all, options: { worker: { workflows: running } } });
    const { flowId, runIds } = await t.durable.startFlow(t.durable.flow().add('a', RfNode));
    await t.durable.waitForRun(runIds.a, { timeout: 30_000 });
    const before = await finished('rf_node', 'cancelled');
    const { runIds: more } = await t.durable.startFlow(
      (await t.durable.appendFlow(flowId, { checkDeps: false }))
        .add('orphan', RfNode, {}, { deps: ['ghost'] })
        .add('downstream', RfNode, {}, { deps: ['orphan'] }),
    );
    await waitFor(async () => (await t.durable.getRun(more.downstream))?.status === 'cancelled', {
      timeout: 30_000,
      message: 'the flow maintenance cancels the nodes behind the missing dep',
    });
    expect((await t.durable.getRun(more.orphan))!.error).toMatchObject({ reason: 'deleted' });
    await waitFor(async () => (await finished('rf_node', 'cancelled')) === before + 2, { timeout: 15_000, message: 'both nodes are counted' });
    const next = await t.durable.start('rf_node', {});
    await t.durable.waitForRun(next.runId, { timeout: 30_000 });
    expect(await finished('rf_node', 'cancelled')).toBe(before + 2);
  });

  it('counts the child cancelled with a parent that timed out while it waited for it', async () => {
    const t = await createApp({ workflows: all, options: { worker: { workflows: running } } });
    const before = { failed: await finished('rf_timed_parent', 'failed'), child: await finished('rf_hold', 'cancelled') };
    const p = await t.durable.start('rf_timed_parent', {});
    const [child] = await waitFor(
      async () => {
        const kids = await t.durable.listRuns({ parentId: p.runId });
        return kids.length === 1 && kids[0].status === 'waiting' ? kids : undefined;
      },
      { timeout: 30_000, message: 'the child waits' },
    );
    await waitFor(async () => (await t.durable.getRun(p.runId))?.status === 'failed', { timeout: 30_000, message: 'the parent times out' });
    expect((await t.durable.getRun(child.id))!.status).toBe('cancelled');
    await waitFor(async () => (await finished('rf_timed_parent', 'failed')) === before.failed + 1, { message: 'the parent is counted' });
    await waitFor(async () => (await finished('rf_hold', 'cancelled')) === before.child + 1, { timeout: 15_000, message: 'its child is counted' });
  });
});
