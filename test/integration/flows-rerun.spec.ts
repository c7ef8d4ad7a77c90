/**
 * `rerunFlow(flowId, { from })` (docs/flows.md, "Running part of a flow again"): the node and
 * everything downstream of it run again as fresh runs, upstream results are reused; refused while a
 * node of the rerun runs; consistent under concurrent appends.
 */
import { DurableService, DurableValidationError, NotFinishedError, RunContext, RunInfo, RunNotFoundError, Step, Workflow } from '../../src';
import { DataSource } from 'typeorm';
import { countRuns, createApp, databaseUrl, Gate, ident, sql, waitFor, waitForLockWait } from '../support';
import { expectKeyTaken, holdersOf, rejection } from '../support/keys';

let gate = new Gate();
/** run ids, once per execution of a step */
const executed: string[] = [];
let failFlaky = true;

@Workflow('fr_node', { retry: { attempts: 1 } })
class Node {
  @Step()
  async run(ctx: RunContext<{ block?: boolean } | null>) {
    executed.push(ctx.runId);
    if (ctx.input?.block) await gate.wait(ctx.signal);
    const seen: Record<string, unknown> = {};
    for (const d of ctx.flow!.deps) seen[d] = await ctx.flow!.getRecorded(d);
    return { name: ctx.flow!.name, runId: ctx.runId, seen };
  }
}

@Workflow('fr_flaky', { retry: { attempts: 1 } })
class Flaky {
  @Step()
  async run(ctx: RunContext) {
    executed.push(ctx.runId);
    if (failFlaky) throw new Error('not yet');
    return { name: ctx.flow!.name, runId: ctx.runId };
  }
}

@Workflow('fr_never', { reuse: 'never', retry: { attempts: 1 } })
class Never {
  @Step()
  async run(ctx: RunContext) {
    executed.push(ctx.runId);
    return ctx.flow!.name;
  }
}

const workflows = [Node, Flaky, Never];
const FINAL = ['completed', 'failed', 'cancelled'];

async function nodes(durable: DurableService, flowId: string): Promise<Record<string, RunInfo>> {
  return Object.fromEntries((await durable.listRuns({ flowId, limit: 1000 })).map((r) => [r.name!, r]));
}

/** Waits until every node of the flow has finished; returns them by name. */
async function settled(durable: DurableService, flowId: string, count: number) {
  return waitFor(
    async () => {
      const r = await nodes(durable, flowId);
      return Object.keys(r).length === count && Object.values(r).every((x) => FINAL.includes(x.status)) ? r : undefined;
    },
    { timeout: 20_000, message: `flow ${flowId} settled` },
  );
}

describe('DAG flows: rerunFlow', () => {
  beforeEach(() => {
    gate = new Gate();
    executed.length = 0;
    failFlaky = true;
  });
  afterEach(() => gate.open());

  it('reruns a middle node and everything downstream, reusing the upstream results; the flow completes again', async () => {
    const { durable, schema } = await createApp({ workflows });
    // a → b → c, a → d, (b, d) → e: from b reruns b, c and e; a and d keep their results
    const { flowId } = await durable.startFlow(
      durable
        .flow()
        .add('a', Node)
        .add('b', Node, null, { deps: ['a'] })
        .add('c', Node, null, { deps: ['b'] })
        .add('d', Node, null, { deps: ['a'] })
        .add('e', Node, null, { deps: ['b', 'd'] }),
    );
    const before = await settled(durable, flowId, 5);
    executed.length = 0;
    const { flowId: same, runIds } = await durable.rerunFlow(flowId, { from: 'b' });
    expect(same).toBe(flowId);
    expect(Object.keys(runIds).sort()).toEqual(['b', 'c', 'e']);
    const after = await settled(durable, flowId, 5);
    expect(Object.values(after).every((r) => r.status === 'completed')).toBe(true);
    // upstream and sibling nodes are the same runs, not run again
    for (const n of ['a', 'd']) expect(after[n].id).toBe(before[n].id);
    for (const n of ['b', 'c', 'e']) {
      expect(after[n].id).toBe(runIds[n]);
      expect(after[n].id).not.toBe(before[n].id);
    }
    expect([...executed].sort()).toEqual([runIds.b, runIds.c, runIds.e].sort());
    // the reruns read the recorded results: a's from the first run, b's from b's rerun
    expect((after.b.result as { seen: Record<string, unknown> }).seen.a).toEqual(before.a.result);
    expect((after.c.result as { seen: Record<string, { runId: string }> }).seen.b.runId).toBe(runIds.b);
    expect((after.e.result as { seen: Record<string, unknown> }).seen).toEqual({ b: after.b.result, d: before.d.result });
    // downstream nodes waited for their deps again
    expect(after.c.startedAt!.getTime()).toBeGreaterThanOrEqual(after.b.finishedAt!.getTime());
    expect(after.e.startedAt!.getTime()).toBeGreaterThanOrEqual(after.b.finishedAt!.getTime());
    // the runs replaced keep their history as runs of their own, outside the flow
    const old = await durable.getRun(before.b.id);
    expect(old).toMatchObject({ status: 'completed', flowId: null, result: before.b.result });
    const g = await durable.getFlowGraph(flowId);
    expect(Object.fromEntries(g.nodes.map((n) => [n.name, n.runId]))).toEqual(Object.fromEntries(Object.entries(after).map(([n, r]) => [n, r.id])));
    expect(await sql(`SELECT 1 FROM ${ident(schema)}.flow_deps WHERE flow_id = $1 AND NOT resolved`, [flowId])).toHaveLength(0);
  });

  it('reruns a failed node: its dependants, cancelled by the failure, run this time', async () => {
    const { durable } = await createApp({ workflows });
    const { flowId } = await durable.startFlow(
      durable
        .flow()
        .add('a', Node)
        .add('flaky', Flaky, null, { deps: ['a'] })
        .add('after', Node, null, { deps: ['flaky'] }),
    );
    const first = await settled(durable, flowId, 3);
    expect([first.a.status, first.flaky.status, first.after.status]).toEqual(['completed', 'failed', 'cancelled']);
    failFlaky = false;
    const { runIds } = await durable.rerunFlow(flowId, { from: 'flaky' });
    const again = await settled(durable, flowId, 3);
    expect([again.a.status, again.flaky.status, again.after.status]).toEqual(['completed', 'completed', 'completed']);
    expect(again.a.id).toBe(first.a.id);
    expect(again.after.id).toBe(runIds.after);
    expect((again.after.result as { seen: Record<string, unknown> }).seen.flaky).toEqual({ name: 'flaky', runId: runIds.flaky });
  });

  it('deps outside the rerun apply again with the ignore options of the edges: a failed one cancels, unless ignored', async () => {
    const { durable } = await createApp({ workflows });
    const { flowId } = await durable.startFlow(
      durable
        .flow()
        .add('a', Node)
        .add('bad', Flaky)
        .add('strict', Node, null, { deps: ['a', 'bad'] })
        .add('lenient', Node, null, { deps: ['a', 'bad'], ignoreFailed: true }),
    );
    const first = await settled(durable, flowId, 4);
    expect([first.strict.status, first.lenient.status]).toEqual(['cancelled', 'completed']);
    const { runIds } = await durable.rerunFlow(flowId, { from: 'a' });
    expect(Object.keys(runIds).sort()).toEqual(['a', 'lenient', 'strict']);
    const again = await settled(durable, flowId, 4);
    expect(again.bad.id).toBe(first.bad.id);
    expect(again.strict).toMatchObject({ id: runIds.strict, status: 'cancelled' });
    expect(again.lenient).toMatchObject({ id: runIds.lenient, status: 'completed' });
    expect(again.lenient.startedAt!.getTime()).toBeGreaterThanOrEqual(again.a.finishedAt!.getTime());
  });

  it('a keyed node takes its key over from the run it replaces; under reuse "never" the rerun is refused as rerun is', async () => {
    const { durable, schema } = await createApp({ workflows });
    const { flowId, runIds } = await durable.startFlow(
      durable
        .flow()
        .add('k', Node, null, { key: 'k1' })
        .add('n', Never, null, { deps: ['k'], key: 'n1' }),
    );
    await settled(durable, flowId, 2);
    await expectKeyTaken(durable.rerunFlow(flowId, { from: 'n' }), runIds.n);
    await expectKeyTaken(durable.rerunFlow(flowId, { from: 'k' }), runIds.n);
    // refused: nothing changed
    expect((await nodes(durable, flowId)).k.id).toBe(runIds.k);
    await durable.releaseKey(runIds.n);
    const again = await durable.rerunFlow(flowId, { from: 'k' });
    await settled(durable, flowId, 2);
    expect(await holdersOf(schema, 'fr_node', 'k1')).toEqual([again.runIds.k]);
    expect(await holdersOf(schema, 'fr_never', 'n1')).toEqual([again.runIds.n]);
  });

  it('reruns a wide flow from its root in one transaction: a thousand fresh nodes waiting for the fresh root', async () => {
    const { durable, schema } = await createApp({ workflows, options: { worker: false } });
    let f = durable.flow().add('root', Node);
    for (let i = 0; i < 1000; i++) f = f.add(`leaf_${i}`, Node, null, { deps: ['root'] });
    const { flowId } = await durable.startFlow(f);
    // every node finished (no worker here: marked by hand)
    await sql(`UPDATE ${ident(schema)}.runs SET status = 'completed', finished_at = now() WHERE flow_id = $1`, [flowId]);
    const { runIds } = await durable.rerunFlow(flowId, { from: 'root' });
    expect(Object.keys(runIds)).toHaveLength(1001);
    const statuses = await sql(`SELECT status, count(*)::int AS n FROM ${ident(schema)}.runs WHERE flow_id = $1 GROUP BY status ORDER BY status`, [flowId]);
    expect(statuses).toEqual([
      { status: 'pending', n: 1 },
      { status: 'waiting', n: 1000 },
    ]);
    expect(await countRuns(schema, 'flow_id IS NULL')).toBe(1001);
  });

  it('validates: unknown flow, unknown node, misspelt or missing options', async () => {
    const { durable } = await createApp({ workflows, options: { worker: false } });
    const { flowId } = await durable.startFlow(durable.flow().add('a', Node));
    await expect(durable.rerunFlow('no-such-flow', { from: 'a' })).rejects.toBeInstanceOf(RunNotFoundError);
    const unknown = await rejection(durable.rerunFlow(flowId, { from: 'zz' }));
    expect(unknown).toBeInstanceOf(DurableValidationError);
    expect((unknown as Error).message).toContain(`flow ${flowId} has no node "zz"`);
    const misspelt = await rejection(durable.rerunFlow(flowId, { form: 'a' } as never));
    expect(misspelt).toBeInstanceOf(DurableValidationError);
    expect((misspelt as Error).message).toMatch(/form.*from/);
    await expect(durable.rerunFlow(flowId, {} as never)).rejects.toBeInstanceOf(DurableValidationError);
  });

  it('is refused with NotFinishedError while a node of the rerun has not finished, and changes nothing', async () => {
    const { durable, schema } = await createApp({ workflows });
    const { flowId, runIds } = await durable.startFlow(
      durable
        .flow()
        .add('a', Node)
        .add('b', Node, { block: true }, { deps: ['a'] })
        .add('c', Node, null, { deps: ['b'] }),
    );
    await waitFor(() => gate.arrived === 1);
    const err = await rejection(durable.rerunFlow(flowId, { from: 'a' }));
    expect(err).toBeInstanceOf(NotFinishedError);
    expect([runIds.b, runIds.c]).toContain((err as NotFinishedError).runId);
    await expect(durable.rerunFlow(flowId, { from: 'c' })).rejects.toBeInstanceOf(NotFinishedError);
    gate.open();
    const done = await settled(durable, flowId, 3);
    expect(Object.fromEntries(Object.entries(done).map(([n, r]) => [n, r.id]))).toEqual(runIds);
    expect(await countRuns(schema)).toBe(3);
  });

  it('under concurrent appends: every appended node runs after its deps, nothing is lost or run twice', async () => {
    const { durable, schema } = await createApp({ workflows, concurrency: 10 });
    const { flowId } = await durable.startFlow(
      durable
        .flow()
        .add('a', Node)
        .add('b', Node, null, { deps: ['a'] }),
    );
    let count = 2;
    let reran = 0;
    let refused = 0;
    for (let i = 0; i < 12; i++) {
      await settled(durable, flowId, count);
      const [rerun, append] = await Promise.allSettled([
        durable.rerunFlow(flowId, { from: i % 2 ? 'a' : 'b' }),
        durable.appendFlow(flowId).then((f) => durable.startFlow(f.add(`x${i}`, Node, null, { deps: ['b'] }))),
      ]);
      expect(append.status).toBe('fulfilled');
      count++;
      if (rerun.status === 'fulfilled') reran++;
      else {
        // the append came first: its node (downstream of the rerun) had not finished
        expect(rerun.reason).toBeInstanceOf(NotFinishedError);
        refused++;
      }
    }
    const all = await settled(durable, flowId, count);
    expect(reran + refused).toBe(12);
    expect(reran).toBeGreaterThan(0);
    expect(Object.values(all).every((r) => r.status === 'completed')).toBe(true);
    // each node ran after each of its deps (the current runs), and no run executed twice
    for (const r of Object.values(all)) {
      for (const d of r.deps ?? []) expect(r.startedAt!.getTime()).toBeGreaterThanOrEqual(all[d].finishedAt!.getTime());
    }
    expect(new Set(executed).size).toBe(executed.length);
    for (const r of Object.values(all)) expect(executed).toContain(r.id);
    // the edges all point at the flow's current runs and are resolved
    const edges = await sql(
      `SELECT d.resolved, r.flow_id FROM ${ident(schema)}.flow_deps d LEFT JOIN ${ident(schema)}.runs r ON r.id = d.run_id WHERE d.flow_id = $1`,
      [flowId],
    );
    expect(edges).toHaveLength(count - 1);
    expect(edges.every((e) => e.resolved && e.flow_id === flowId)).toBe(true);
  });

  it('waits for an append in an open transaction, then reruns with the appended node in the graph', async () => {
    const ds = new DataSource({ type: 'postgres', url: databaseUrl() });
    await ds.initialize();
    try {
      const { durable } = await createApp({ workflows, options: { dataSource: ds } });
      const { flowId } = await durable.startFlow(
        durable
          .flow()
          .add('a', Node)
          .add('b', Node, null, { deps: ['a'] }),
      );
      await settled(durable, flowId, 2);
      let rerun: Promise<unknown> | undefined;
      let appended: Record<string, string> = {};
      await ds.transaction(async (manager) => {
        // x hangs off a: outside the rerun from b
        const more = (await durable.appendFlow(flowId)).add('x', Node, null, { deps: ['a'] });
        appended = (await durable.startFlow(more, { manager })).runIds;
        rerun = durable.rerunFlow(flowId, { from: 'b' });
        await waitForLockWait(['updated_at = now()', 'flows'], 'the rerun waits for the flow row the append holds');
      });
      const { runIds } = (await rerun) as { runIds: Record<string, string> };
      expect(Object.keys(runIds)).toEqual(['b']);
      const all = await settled(durable, flowId, 3);
      expect(all.x.id).toBe(appended.x);
      expect(all.b.id).toBe(runIds.b);
      expect(Object.values(all).every((r) => r.status === 'completed')).toBe(true);
    } finally {
      await ds.destroy();
    }
  });
});
