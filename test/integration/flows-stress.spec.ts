import { DurableService, OnFlowCancelled, RunContext, RunInfo, Step, Workflow } from '../../src';
import { createApp, freshSchema, ident, sql, waitFor } from '../support';

/** Executions of each node's step (run id → count), and deps found unfinished when a step began. */
const executions = new Map<string, number>();
const violations: string[] = [];
const hooks = new Map<string, number>();

/** One node: checks its deps have completed, then completes or fails (no retry) as its input says. */
@Workflow('stress_node', { retry: { attempts: 1 } })
class Node implements OnFlowCancelled {
  @Step()
  async run(ctx: RunContext<{ fail?: boolean }>) {
    executions.set(ctx.runId, (executions.get(ctx.runId) ?? 0) + 1);
    for (const dep of await ctx.flow!.allJobs({ onlyDeps: true })) {
      if (dep.status !== 'completed') violations.push(`${ctx.flow!.flowId}/${ctx.flow!.name} began with dep ${dep.name} ${dep.status}`);
    }
    if (ctx.flow!.deps.length !== (await ctx.flow!.allJobs({ onlyDeps: true })).length) violations.push(`${ctx.flow!.name}: a dep is missing`);
    if (ctx.input?.fail) throw new Error('planned failure');
    return ctx.flow!.name;
  }

  afterCancelled(_reason: string, run: RunInfo) {
    hooks.set(run.id, (hooks.get(run.id) ?? 0) + 1);
  }
}

/** A small seeded generator, so a failure can be replayed. */
function random(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const FINAL = ['completed', 'failed', 'cancelled'];

/** The flow nodes of `schema`, once there are `total` and every one has ended. */
function allEnded(schema: string, total: number, message: string) {
  return waitFor(
    async () => {
      const r = await sql<{ id: string; flow_id: string; name: string; status: string; deps: string[]; started_at: Date | null; cancel_reason: string | null }>(
        `select id, flow_id, name, status, coalesce(deps, '{}') deps, started_at, cancel_reason from ${ident(schema)}.runs where flow_id is not null`,
      );
      return r.length === total && r.every((x) => FINAL.includes(x.status)) ? r : undefined;
    },
    { timeout: 90_000, message },
  );
}

describe('DAG flows under load: random graphs, failures, cancels and appends on three nodes', () => {
  it('every node ends, runs at most once and only after its deps completed; each node cancelled by a dep gets one afterCancelled', async () => {
    // one graph by default (the same in every run of the suite); FLOWS_STRESS_SEED=<n> tries another
    const seed = Number(process.env.FLOWS_STRESS_SEED ?? 1);
    const rnd = random(seed);
    const schema = freshSchema();
    const apps = [];
    for (let i = 0; i < 3; i++) apps.push(await createApp({ workflows: [Node], schema, concurrency: 6 }));
    const durable: DurableService = apps[0].durable;
    const flows: { flowId: string; names: string[] }[] = [];
    for (let f = 0; f < 10; f++) {
      let flow = durable.flow({ name: `stress-${seed}` });
      const names: string[] = [];
      for (let i = 0; i < 50; i++) {
        const deps = names.filter(() => rnd() < 3 / Math.max(names.length, 1)).slice(0, 4);
        const name = `n${i}`;
        flow = flow.add(name, Node, { fail: rnd() < 0.08 }, { deps });
        names.push(name);
      }
      const { flowId } = await durable.startFlow(flow);
      flows.push({ flowId, names });
    }
    // meanwhile: operators cancel some nodes, and appends add nodes depending on existing ones
    const cancelled = new Set<string>();
    const side: Promise<unknown>[] = [];
    for (let k = 0; k < 12; k++) {
      const f = flows[Math.floor(rnd() * flows.length)];
      const name = f.names[Math.floor(rnd() * f.names.length)];
      side.push(
        (async () => {
          const [row] = await sql(`select id from ${ident(schema)}.runs where flow_id = $1 and name = $2`, [f.flowId, name]);
          await apps[k % 3].durable.cancel(row.id, { reason: 'by the operator' });
          const [after] = await sql(`select status, cancel_reason from ${ident(schema)}.runs where id = $1`, [row.id]);
          if (after.status === 'cancelled' && after.cancel_reason === 'by the operator') cancelled.add(row.id);
        })(),
      );
    }
    for (let k = 0; k < 12; k++) {
      const f = flows[k % flows.length];
      const deps = f.names.filter(() => rnd() < 0.1).slice(0, 3);
      const name = `x${k}`;
      f.names.push(name);
      side.push(
        (async () => {
          const more = await apps[(k + 1) % 3].durable.appendFlow(f.flowId);
          await apps[(k + 1) % 3].durable.startFlow(more.add(name, Node, { fail: rnd() < 0.08 }, { deps }));
        })(),
      );
    }
    await Promise.all(side);
    const total = flows.reduce((n, f) => n + f.names.length, 0);
    const rows = await allEnded(schema, total, `every node of the flows (seed ${seed}) ended`);
    expect({ seed, violations }).toEqual({ seed, violations: [] });
    const byKey = new Map(rows.map((r) => [`${r.flow_id}/${r.name}`, r]));
    for (const r of rows) {
      expect([seed, r.name, executions.get(r.id) ?? 0]).toEqual([seed, r.name, r.started_at ? 1 : 0]);
      const deps = r.deps.map((d) => byKey.get(`${r.flow_id}/${d}`)!);
      const allDone = deps.every((d) => d.status === 'completed');
      if (r.status !== 'cancelled') expect([seed, r.name, allDone]).toEqual([seed, r.name, true]);
      else if (!cancelled.has(r.id) && r.started_at === null && /dependency/.test(r.cancel_reason ?? ''))
        expect([seed, r.name, allDone]).toEqual([seed, r.name, false]);
    }
    // then part of each flow runs again (rerunFlow) while more nodes are appended to it
    const reruns: Promise<unknown>[] = [];
    for (const [i, f] of flows.entries()) {
      const from = f.names[Math.floor(rnd() * 20)];
      reruns.push(apps[i % 3].durable.rerunFlow(f.flowId, { from }));
      const name = `y${i}`;
      const deps = [from, ...f.names.filter(() => rnd() < 0.05).slice(0, 2)];
      f.names.push(name);
      reruns.push(
        (async () => {
          const more = await apps[(i + 1) % 3].durable.appendFlow(f.flowId);
          await apps[(i + 1) % 3].durable.startFlow(more.add(name, Node, {}, { deps: [...new Set(deps)] }));
        })(),
      );
    }
    const outcomes = await Promise.allSettled(reruns);
    // a rerun meeting an appended node still going is refused (NotFinishedError), nothing else fails
    for (const o of outcomes) if (o.status === 'rejected') expect((o.reason as { code?: string }).code).toBe('not_finished');
    const total2 = flows.reduce((n, f) => n + f.names.length, 0);
    const rows2 = await allEnded(schema, total2, `every node of the flows (seed ${seed}) ended after the reruns`);
    expect({ seed, violations }).toEqual({ seed, violations: [] });
    const byKey2 = new Map(rows2.map((r) => [`${r.flow_id}/${r.name}`, r]));
    for (const r of rows2) {
      expect([seed, r.name, executions.get(r.id) ?? 0]).toEqual([seed, r.name, r.started_at ? 1 : 0]);
      const allDone = r.deps.every((d) => byKey2.get(`${r.flow_id}/${d}`)!.status === 'completed');
      if (r.status !== 'cancelled') expect([seed, r.name, allDone]).toEqual([seed, r.name, true]);
    }
    // one afterCancelled for each node a dep cancelled, none for the others
    // (runs a rerun replaced have left their flow: every run of the schema counts)
    const byDep = (
      await sql<{ id: string }>(`select id from ${ident(schema)}.runs where status = 'cancelled' and cancel_reason like 'a dependency was %'`)
    ).map((r) => r.id);
    await waitFor(
      async () =>
        byDep.every((id) => hooks.get(id) === 1) &&
        (await sql(`select count(*)::int n from ${ident(schema)}.flow_hooks where hook = 'afterCancelled'`))[0].n === 0,
      {
        timeout: 30_000,
        message: `afterCancelled of ${byDep.length} node(s)`,
      },
    );
    for (const [id, n] of hooks) expect([seed, id, n, byDep.includes(id)]).toEqual([seed, id, 1, true]);
  }, 180_000);
});
