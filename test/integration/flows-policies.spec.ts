import { FlowNodeOptions, FlowOptions, OnFlowCancelled, RunContext, RunInfo, Step, Workflow } from '../../src';
import { createApp, Gate, ident, sql, TestApp, waitFor } from '../support';

const hookCalls: { reason: string; name: string | null; runId: string; status: string }[] = [];
let gate = new Gate();

@Workflow('pol_ok')
class Ok implements OnFlowCancelled {
  @Step()
  async run(ctx: RunContext) {
    return `ok:${ctx.flow?.name}`;
  }

  afterCancelled(reason: 'cancelled' | 'failed' | 'deleted', run: RunInfo) {
    hookCalls.push({ reason, name: run.name, runId: run.id, status: run.status });
  }
}

@Workflow('pol_fail', { retry: { attempts: 1 } })
class Fail {
  @Step()
  async run() {
    throw new Error('boom');
  }
}

/** Runs until its signal aborts (cancel) or the gate opens. */
@Workflow('pol_hold')
class Hold {
  @Step()
  async run(ctx: RunContext) {
    await gate.wait(ctx.signal);
    if (ctx.signal.aborted) throw new Error('aborted');
    return 'held';
  }
}

/** A saga: the first step is undone when the second fails → the run ends `compensated`. */
@Workflow('pol_saga', { retry: { attempts: 1 } })
class Saga {
  @Step({ compensate: 'undo' })
  async book() {
    return 'booked';
  }

  @Step()
  async pay() {
    throw new Error('card declined');
  }

  async undo() {
    return 'undone';
  }
}

/** Has a short workflow timeout: it must count from when the node becomes pending, not while it waits. */
@Workflow('pol_quick', { timeout: '400ms' })
class Quick {
  @Step()
  async run() {
    return 'quick';
  }
}

/** Fails its first attempt, succeeds on the second (a short backoff). */
const flakyAttempts: number[] = [];
@Workflow('pol_flaky')
class Flaky {
  @Step({ retry: { attempts: 2, backoff: 'fixed', initialDelay: '200ms' } })
  async run(ctx: RunContext) {
    flakyAttempts.push(ctx.attempt);
    if (ctx.attempt === 1) throw new Error('first attempt fails');
    return 'flaky-ok';
  }
}

/** Counts its runs by flow node name. */
const ranByName: Record<string, number> = {};
@Workflow('pol_count')
class Count {
  @Step()
  async run(ctx: RunContext) {
    ranByName[ctx.flow!.name] = (ranByName[ctx.flow!.name] ?? 0) + 1;
    return ctx.flow!.getRecorded('dep') ?? null;
  }
}

const workflows = [Ok, Fail, Hold, Saga, Quick, Flaky, Count];
const FINAL = ['completed', 'failed', 'cancelled', 'compensated', 'compensation_failed'];

async function finalRun(durable: { getRun(id: string): Promise<RunInfo | null> }, id: string, timeout = 15_000) {
  return waitFor(
    async () => {
      const r = await durable.getRun(id);
      return r && FINAL.includes(r.status) ? r : undefined;
    },
    { timeout, message: `run ${id} finished` },
  );
}

describe('DAG flows: failure policies, cancel cascade, afterCancelled, deleted deps', () => {
  beforeEach(() => {
    hookCalls.length = 0;
    gate = new Gate();
  });

  it('a failed dep cancels its dependants transitively; afterCancelled runs once per cancelled node', async () => {
    const { durable, schema } = await createApp({ workflows });
    const { flowId, runIds } = await durable.startFlow(
      durable
        .flow()
        .add('a', Fail)
        .add('b', Ok, {}, { deps: ['a'] })
        .add('c', Ok, {}, { deps: ['b'] })
        .add('d', Ok, {}, { deps: ['c', 'x'] })
        .add('x', Ok),
    );
    expect((await finalRun(durable, runIds.a)).status).toBe('failed');
    const b = await finalRun(durable, runIds.b);
    const c = await finalRun(durable, runIds.c);
    const d = await finalRun(durable, runIds.d);
    expect(b).toMatchObject({ status: 'cancelled', startedAt: null, error: expect.objectContaining({ reason: 'failed' }) });
    expect(c).toMatchObject({ status: 'cancelled', startedAt: null, error: expect.objectContaining({ reason: 'cancelled' }) });
    expect(d.status).toBe('cancelled');
    expect((await finalRun(durable, runIds.x)).status).toBe('completed');
    await waitFor(async () => (await sql(`select count(*)::int n from ${ident(schema)}.flow_hooks`))[0].n === 0 && hookCalls.length === 3);
    const byName = Object.fromEntries(hookCalls.map((h) => [h.name, h]));
    expect(Object.keys(byName).sort()).toEqual(['b', 'c', 'd']);
    expect(byName.b).toMatchObject({ reason: 'failed', runId: runIds.b, status: 'cancelled' });
    expect(byName.c.reason).toBe('cancelled');
    expect(byName.d.reason).toBe('cancelled');
    // a few more maintenance passes do not call them again (the hook rows are gone)
    const barrier = await durable.startFlow(durable.flow().add('z', Ok));
    await finalRun(durable, barrier.runIds.z);
    expect(hookCalls).toHaveLength(3);
    expect((await durable.listRuns({ flowId })).filter((r) => r.status === 'cancelled')).toHaveLength(3);
  });

  /**
   * Every combination: the dep ends cancelled / failed / deleted; the matching ignore option is
   * off, on for the flow, on for the node, on for the flow but off for the node, or only a
   * different ignore option is on. The dependant completes exactly when the matching option applies.
   */
  it('ignoreCancelled / ignoreFailed / ignoreDeleted at flow and node level, every combination', async () => {
    const { durable, schema } = await createApp({ workflows, concurrency: 20 });
    const outcomes = ['cancelled', 'failed', 'deleted'] as const;
    const opt = { cancelled: 'ignoreCancelled', failed: 'ignoreFailed', deleted: 'ignoreDeleted' } as const;
    const levels = ['none', 'flow', 'node', 'flowButNodeOff', 'otherOnly', 'all'] as const;
    const cases: { outcome: (typeof outcomes)[number]; level: (typeof levels)[number]; a: string; b: string; expected: string }[] = [];
    for (const outcome of outcomes) {
      for (const level of levels) {
        const key = opt[outcome];
        const other = opt[outcome === 'failed' ? 'cancelled' : 'failed'];
        const flowOpts: FlowOptions = {};
        const nodeOpts: FlowNodeOptions = { deps: ['a'] };
        if (level === 'flow') flowOpts[key] = true;
        if (level === 'node') nodeOpts[key] = true;
        if (level === 'flowButNodeOff') {
          flowOpts[key] = true;
          nodeOpts[key] = false;
        }
        if (level === 'otherOnly') {
          flowOpts[other] = true;
          nodeOpts[other] = true;
        }
        if (level === 'all') Object.assign(flowOpts, { ignoreCancelled: true, ignoreFailed: true, ignoreDeleted: true });
        const dep = outcome === 'failed' ? Fail : Hold;
        const { runIds } = await durable.startFlow(durable.flow(flowOpts).add('a', dep).add('b', Ok, {}, nodeOpts));
        const ignored = level === 'flow' || level === 'node' || level === 'all';
        cases.push({ outcome, level, a: runIds.a, b: runIds.b, expected: ignored ? 'completed' : 'cancelled' });
      }
    }
    for (const c of cases) {
      if (c.outcome === 'cancelled') await durable.cancel(c.a, { reason: 'test' });
      if (c.outcome === 'deleted') await sql(`delete from ${ident(schema)}.runs where id = $1`, [c.a]);
    }
    const seen = [];
    for (const c of cases) {
      const b = await finalRun(durable, c.b);
      seen.push({ outcome: c.outcome, level: c.level, status: b.status });
    }
    expect(seen).toEqual(cases.map((c) => ({ outcome: c.outcome, level: c.level, status: c.expected })));
    // the cancelled dependants got their hook with the dep's outcome as the reason
    await waitFor(() => hookCalls.length === cases.filter((c) => c.expected === 'cancelled').length);
    for (const c of cases.filter((x) => x.expected === 'cancelled')) {
      expect(hookCalls.find((h) => h.runId === c.b)?.reason).toBe(c.outcome);
    }
  });

  it('a cancelled dependant counts as cancelled further down: ignoreCancelled there lets the rest run', async () => {
    const { durable } = await createApp({ workflows });
    const { runIds } = await durable.startFlow(
      durable
        .flow()
        .add('a', Fail)
        .add('b', Ok, {}, { deps: ['a'] })
        .add('c', Ok, {}, { deps: ['b'], ignoreCancelled: true })
        .add('d', Ok, {}, { deps: ['c'] }),
    );
    expect((await finalRun(durable, runIds.b)).status).toBe('cancelled');
    expect((await finalRun(durable, runIds.c)).status).toBe('completed');
    expect((await finalRun(durable, runIds.d)).status).toBe('completed');
    await waitFor(() => hookCalls.length === 1);
    expect(hookCalls[0]).toMatchObject({ name: 'b', reason: 'failed' });
  });

  it('cancelling a running node or a waiting node cascades to its dependants', async () => {
    const { durable } = await createApp({ workflows });
    const { runIds } = await durable.startFlow(
      durable
        .flow()
        .add('a', Hold)
        .add('b', Ok, {}, { deps: ['a'] })
        .add('c', Ok, {}, { deps: ['b'] })
        .add('h', Hold)
        .add('w', Ok, {}, { deps: ['h'] })
        .add('w2', Ok, {}, { deps: ['w'] }),
    );
    await waitFor(() => gate.arrived === 2);
    await durable.cancel(runIds.a);
    // cancelling a node that waits for its deps: it gets no hook (nobody cancelled it for a dep), its dependant does
    await durable.cancel(runIds.w);
    for (const n of ['a', 'b', 'c', 'w', 'w2']) expect([n, (await finalRun(durable, runIds[n])).status]).toEqual([n, 'cancelled']);
    gate.open();
    expect((await finalRun(durable, runIds.h)).status).toBe('completed');
    await waitFor(() => hookCalls.length === 3);
    expect(hookCalls.map((h) => `${h.name}:${h.reason}`).sort()).toEqual(['b:cancelled', 'c:cancelled', 'w2:cancelled']);
  });

  it('pruning a completed dep does not stall its dependants; deleting an unfinished one counts as deleted', async () => {
    const { durable, schema } = await createApp({ workflows });
    const { flowId, runIds } = await durable.startFlow(
      durable
        .flow()
        .add('a', Ok)
        .add('h', Hold)
        .add('b', Ok, {}, { deps: ['a', 'h'] }),
    );
    await finalRun(durable, runIds.a);
    await waitFor(() => gate.arrived === 1);
    // prune everything finished: `a` is deleted while `b` still waits for `h`
    const pruned = await durable.prune({ olderThan: 0 });
    expect(pruned.runs).toBeGreaterThanOrEqual(1);
    expect(await durable.getRun(runIds.a)).toBeNull();
    expect((await durable.getRun(runIds.b))!.status).toBe('waiting');
    gate.open();
    expect((await finalRun(durable, runIds.b)).status).toBe('completed');
    expect(hookCalls).toHaveLength(0);
    // deleting a dep that had not finished: dependants are cancelled with reason 'deleted'
    gate = new Gate();
    const second = await durable.startFlow(
      durable
        .flow()
        .add('a', Hold)
        .add('b', Ok, {}, { deps: ['a'] }),
    );
    await waitFor(() => gate.arrived === 1);
    await sql(`delete from ${ident(schema)}.runs where id = $1`, [second.runIds.a]);
    expect(await finalRun(durable, second.runIds.b)).toMatchObject({ status: 'cancelled', error: expect.objectContaining({ reason: 'deleted' }) });
    await waitFor(() => hookCalls.length === 1);
    expect(hookCalls[0]).toMatchObject({ name: 'b', reason: 'deleted' });
    gate.open();
    expect(flowId).toBeDefined();
  });

  /** A flow a → b on a node without a worker, `a` finished with the flow trigger off: b's wake-up is lost. */
  async function lostWakeUp() {
    const app = await createApp({ workflows, options: { worker: false } });
    const S = ident(app.schema);
    const { runIds } = await app.durable.startFlow(
      app.durable
        .flow()
        .add('a', Ok)
        .add('b', Ok, {}, { deps: ['a'] }),
    );
    await sql(`alter table ${S}.runs disable trigger runs_flow_deps_trg`);
    await sql(`update ${S}.runs set status = 'completed', finished_at = now(), result = '"ok"' where id = $1`, [runIds.a]);
    await sql(`alter table ${S}.runs enable trigger runs_flow_deps_trg`);
    expect((await app.durable.getRun(runIds.b))!.status).toBe('waiting');
    return { app, S, runIds };
  }

  /** Closes `app`; a worker node on its schema must then complete `runId` (through its maintenance pass). */
  async function completedByAWorkerNode(app: TestApp, runId: string) {
    await app.close();
    const node = await createApp({ workflows, schema: app.schema });
    expect((await finalRun(node.durable, runId)).status).toBe('completed');
  }

  it('the repair pass wakes a node whose dep completed but whose wake-up was missed', async () => {
    const { app, runIds } = await lostWakeUp();
    // the open edge whose dep is final is found and resolved
    await completedByAWorkerNode(app, runIds.b);
  });

  it('a dep that fails an attempt and then succeeds: the dependant waits through the retry and runs once, after it', async () => {
    const { durable } = await createApp({ workflows });
    const { runIds } = await durable.startFlow(
      durable
        .flow()
        .add('dep', Flaky)
        .add('after', Count, {}, { deps: ['dep'] }),
    );
    expect(await finalRun(durable, runIds.after)).toMatchObject({ status: 'completed', result: 'flaky-ok' });
    expect((await durable.getRun(runIds.dep))!).toMatchObject({ status: 'completed', attempt: 2 });
    expect(flakyAttempts).toEqual([1, 2]);
    expect(ranByName.after).toBe(1);
  });

  it('the repair pass makes pending a waiting node whose counter went wrong (every edge resolved, deps_left > 0)', async () => {
    const { app, S, runIds } = await lostWakeUp();
    // the edge resolved but the counter not decremented
    await sql(`update ${S}.flow_deps set resolved = true where run_id = $1`, [runIds.b]);
    await completedByAWorkerNode(app, runIds.b);
  });

  it('a dep deleted unseen (its edge not marked missing) is treated as deleted once the flow is quiet', async () => {
    const first = await createApp({ workflows, options: { worker: false } });
    const { schema, durable } = first;
    const S = ident(schema);
    const { runIds } = await durable.startFlow(
      durable
        .flow()
        .add('gone', Ok)
        .add('strict', Ok, {}, { deps: ['gone'] })
        .add('lenient', Ok, {}, { deps: ['gone'], ignoreDeleted: true }),
    );
    // the dep's row vanishes with the flow triggers off: nothing marks the edges missing
    await sql(`alter table ${S}.runs disable trigger user`);
    await sql(`delete from ${S}.runs where id = $1`, [runIds.gone]);
    await sql(`alter table ${S}.runs enable trigger user`);
    expect((await sql(`select count(*)::int n from ${S}.flow_deps where dep_name = 'gone' and (missing or resolved)`))[0].n).toBe(0);
    await first.close();
    const node = await createApp({ workflows, schema });
    expect(await finalRun(node.durable, runIds.strict)).toMatchObject({ status: 'cancelled', error: expect.objectContaining({ reason: 'deleted' }) });
    expect((await finalRun(node.durable, runIds.lenient)).status).toBe('completed');
  });

  it('a compensated dep counts as failed (ignoreFailed decides)', async () => {
    const { durable } = await createApp({ workflows });
    const { runIds } = await durable.startFlow(
      durable
        .flow()
        .add('saga', Saga)
        .add('strict', Ok, {}, { deps: ['saga'] })
        .add('lenient', Ok, {}, { deps: ['saga'], ignoreFailed: true }),
    );
    expect((await finalRun(durable, runIds.saga)).status).toBe('compensated');
    expect(await finalRun(durable, runIds.strict)).toMatchObject({ status: 'cancelled', error: expect.objectContaining({ reason: 'failed' }) });
    expect((await finalRun(durable, runIds.lenient)).status).toBe('completed');
  });

  it("a node's workflow timeout does not run while it waits for its deps", async () => {
    const { durable } = await createApp({ workflows });
    const { runIds } = await durable.startFlow(
      durable
        .flow()
        .add('slow', Hold)
        .add('quick', Quick, {}, { deps: ['slow'] }),
    );
    await waitFor(() => gate.arrived === 1);
    // well past the 400 ms timeout, with maintenance passes (heartbeat 200 ms) in between
    const since = Date.now();
    await waitFor(async () => Date.now() - since > 1_000 && (await durable.getRun(runIds.quick))!.status === 'waiting', { timeout: 5_000 });
    gate.open();
    expect((await finalRun(durable, runIds.quick)).status).toBe('completed');
  });

  it('pruning finished nodes takes their edges and pending hooks with them', async () => {
    const { durable, schema } = await createApp({ workflows });
    const S = ident(schema);
    const { flowId, runIds } = await durable.startFlow(
      durable
        .flow()
        .add('a', Fail)
        .add('b', Ok, {}, { deps: ['a'] })
        .add('c', Ok, {}, { deps: ['b'] }),
    );
    await finalRun(durable, runIds.c);
    expect((await sql(`select count(*)::int n from ${S}.flow_deps`))[0].n).toBe(2);
    await durable.prune({ olderThan: 0 });
    expect(await durable.listRuns({ flowId })).toHaveLength(0);
    expect((await sql(`select count(*)::int n from ${S}.flow_deps`))[0].n).toBe(0);
    expect((await sql(`select count(*)::int n from ${S}.flow_hooks`))[0].n).toBe(0);
  });
});
