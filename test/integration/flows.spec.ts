import { DataSource } from 'typeorm';
import { DurableValidationError, FlowExistsError, RunContext, RunNotFoundError, Step, Workflow } from '../../src';
import { createApp, databaseUrl, sql, ident, waitFor } from '../support';

/** Order in which nodes ran (their `ctx.flow.name`), and overlap bookkeeping. */
const order: string[] = [];
const recorded: Record<string, unknown>[] = [];

@Workflow('flow_echo')
class Echo {
  @Step()
  async run(ctx: RunContext<{ id?: number }>) {
    order.push(ctx.flow?.name ?? `outside:${ctx.runId}`);
    return { id: ctx.input?.id ?? null, name: ctx.flow?.name ?? null };
  }
}

@Workflow('flow_token')
class WorkerA {
  @Step()
  async run(ctx: RunContext<{ apiKey: string }>) {
    return ctx.input.apiKey.split('').reverse().join('');
  }
}

@Workflow('flow_fetch')
class WorkerB {
  @Step()
  async run(ctx: RunContext<{ url: string }>) {
    const token = await ctx.flow!.getRecorded<string>('a');
    return [token, ctx.input.url];
  }
}

@Workflow('flow_report')
class WorkerC {
  @Step()
  async run(ctx: RunContext) {
    const all = await ctx.flow!.allRecorded({ onlyDeps: true });
    recorded.push(all);
    const deps = await ctx.flow!.allJobs({ onlyDeps: true });
    const a = await ctx.flow!.getJob('a');
    return { all, deps: deps.map((d) => d.name), a: a?.status, flowName: ctx.flow!.flowName, everyone: Object.keys(await ctx.flow!.allRecorded()).sort() };
  }
}

@Workflow('flow_plain')
class Plain {
  @Step()
  async run(ctx: RunContext) {
    return { flow: ctx.flow === undefined };
  }
}

const workflows = [Echo, WorkerA, WorkerB, WorkerC, Plain];

async function waitFlow(durable: { listRuns: Function }, flowId: string, n: number, timeout = 15_000) {
  return waitFor(
    async () => {
      const runs = (await durable.listRuns({ flowId, limit: 1000 })) as { status: string; name: string }[];
      return runs.length === n && runs.every((r) => ['completed', 'failed', 'cancelled'].includes(r.status)) ? runs : undefined;
    },
    { timeout, message: `flow ${flowId} finished` },
  );
}

describe('DAG flows: building, starting, running', () => {
  beforeEach(() => {
    order.length = 0;
    recorded.length = 0;
  });

  it('runs a → b → {c, d} → e in dependency order (the spec example)', async () => {
    const { durable } = await createApp({ workflows, concurrency: 5 });
    const flow = durable
      .flow()
      .add('a', Echo, { id: 1 })
      .add('b', Echo, { id: 2 }, { deps: ['a'] })
      .add('c', Echo, { id: 3 }, { deps: ['b'] })
      .add('d', Echo, { id: 4 }, { deps: ['b'] })
      .add('e', Echo, { id: 5 }, { deps: ['c', 'd'] });
    const { flowId, runIds } = await durable.startFlow(flow);
    expect(flowId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-/);
    expect(Object.keys(runIds).sort()).toEqual(['a', 'b', 'c', 'd', 'e']);
    const runs = await waitFlow(durable, flowId, 5);
    expect(runs.every((r) => r.status === 'completed')).toBe(true);
    const at = (n: string) => order.indexOf(n);
    expect(order).toHaveLength(5);
    expect(at('a')).toBeLessThan(at('b'));
    expect(at('b')).toBeLessThan(at('c'));
    expect(at('b')).toBeLessThan(at('d'));
    expect(at('c')).toBeLessThan(at('e'));
    expect(at('d')).toBeLessThan(at('e'));
    const e = await durable.getRun(runIds.e);
    expect(e).toMatchObject({ flowId, name: 'e', deps: ['c', 'd'], result: { id: 5, name: 'e' } });
    // finish order in the database agrees
    const rows = await durable.listRuns({ flowId });
    const fin = Object.fromEntries(rows.map((r) => [r.name!, r.finishedAt!.getTime()]));
    const started = Object.fromEntries(rows.map((r) => [r.name!, r.startedAt!.getTime()]));
    expect(started.e).toBeGreaterThanOrEqual(Math.max(fin.c, fin.d));
    expect(started.b).toBeGreaterThanOrEqual(fin.a);
  });

  it('nodes whose deps are not done are waiting and never claimed', async () => {
    const { durable } = await createApp({ workflows, options: { worker: false } });
    const { flowId, runIds } = await durable.startFlow(
      durable
        .flow({ name: 'parked' })
        .add('a', Echo)
        .add('b', Echo, {}, { deps: ['a'] }),
    );
    expect((await durable.getRun(runIds.a))!.status).toBe('pending');
    expect((await durable.getRun(runIds.b))!).toMatchObject({ status: 'waiting', flowId, flowName: 'parked', name: 'b', deps: ['a'] });
    const listed = await durable.listRuns({ flowId });
    expect(listed.map((r) => r.name).sort()).toEqual(['a', 'b']);
  });

  it('builds dynamic fan-out / fan-in with loops (the spec: a → a_0..a_3 → b → b_0..b_3 → c)', async () => {
    const { durable } = await createApp({ workflows, concurrency: 10 });
    const range = [0, 1, 2, 3];
    const fanOut = (f: ReturnType<typeof durable.flow>, base: string) => range.reduce((acc, k) => acc.add(`${base}_${k}`, Echo, {}, { deps: [base] }), f);
    let flow = durable.flow().add('a', Echo);
    flow = fanOut(flow, 'a');
    flow = flow.add('b', Echo, {}, { deps: range.map((k) => `a_${k}`) });
    flow = fanOut(flow, 'b');
    flow = flow.add('c', Echo, {}, { deps: range.map((k) => `b_${k}`) });
    const { flowId } = await durable.startFlow(flow);
    await waitFlow(durable, flowId, 11);
    const at = (n: string) => order.indexOf(n);
    for (const k of range) {
      expect(at('a')).toBeLessThan(at(`a_${k}`));
      expect(at(`a_${k}`)).toBeLessThan(at('b'));
      expect(at('b')).toBeLessThan(at(`b_${k}`));
      expect(at(`b_${k}`)).toBeLessThan(at('c'));
    }
    expect(order.filter((n) => n === 'b')).toHaveLength(1);
    expect(order.filter((n) => n === 'c')).toHaveLength(1);
  });

  it('downstream nodes read upstream results: a → {b, c, d} → e (the spec example)', async () => {
    const { durable } = await createApp({ workflows, concurrency: 5 });
    const flow = durable
      .flow({ name: 'recorded' })
      .add('a', WorkerA, { apiKey: '23kl239bjljlk309af' })
      .add('b', WorkerB, { url: 'elixir-lang.org' }, { deps: ['a'] })
      .add('c', WorkerB, { url: 'www.erlang.org' }, { deps: ['a'] })
      .add('d', WorkerB, { url: 'oban.pro' }, { deps: ['a'] })
      .add('e', WorkerC, {}, { deps: ['b', 'c', 'd'] });
    const { flowId, runIds } = await durable.startFlow(flow);
    await waitFlow(durable, flowId, 5);
    const token = '23kl239bjljlk309af'.split('').reverse().join('');
    const e = await durable.getRun(runIds.e);
    expect(e!.status).toBe('completed');
    expect(e!.result).toEqual({
      all: { b: [token, 'elixir-lang.org'], c: [token, 'www.erlang.org'], d: [token, 'oban.pro'] },
      deps: ['b', 'c', 'd'],
      a: 'completed',
      flowName: 'recorded',
      everyone: ['a', 'b', 'c', 'd'],
    });
  });

  it('ctx.flow is undefined outside flows', async () => {
    const { durable } = await createApp({ workflows });
    const { runId } = await durable.start(Plain);
    expect((await durable.waitForRun(runId, { timeout: 10_000 })).result).toEqual({ flow: true });
  });

  it('uses a custom flow id, which must be unique (FlowExistsError, a DurableValidationError)', async () => {
    const { durable } = await createApp({ workflows, options: { worker: false } });
    const r = await durable.startFlow(durable.flow({ id: 'nightly-2026-12-01', name: 'nightly-etl' }).add('a', Echo));
    expect(r.flowId).toBe('nightly-2026-12-01');
    const err = await durable.startFlow(durable.flow({ id: 'nightly-2026-12-01' }).add('x', Echo)).catch((e) => e);
    expect(err).toBeInstanceOf(FlowExistsError);
    expect(err).toBeInstanceOf(DurableValidationError);
    expect(err.flowId).toBe('nightly-2026-12-01');
    // the name is a free label: another flow may share it
    const other = await durable.startFlow(durable.flow({ name: 'nightly-etl' }).add('a', Echo));
    expect(other.flowId).not.toBe(r.flowId);
    expect(await durable.listRuns({ flowId: 'nightly-2026-12-01' })).toHaveLength(1);
  });

  it('refuses bad graphs before writing anything', async () => {
    const { durable, schema } = await createApp({ workflows, options: { worker: false } });
    const cases: [string, () => ReturnType<typeof durable.flow>, RegExp][] = [
      ['empty', () => durable.flow(), /at least one node/],
      ['not a builder', () => ({}) as ReturnType<typeof durable.flow>, /^startFlow: expects a FlowBuilder/],
      ['duplicate', () => durable.flow().add('a', Echo).add('a', Echo), /duplicate node name "a"/],
      [
        'unknown dep',
        () =>
          durable
            .flow()
            .add('a', Echo)
            .add('b', Echo, {}, { deps: ['zz'] }),
        /depends on "zz"/,
      ],
      ['unknown workflow', () => durable.flow().add('a', 'no_such_workflow'), /unknown workflow "no_such_workflow"/],
      ['self', () => durable.flow().add('a', Echo, {}, { deps: ['a'] }), /depends on itself/],
      [
        'cycle',
        () =>
          durable
            .flow()
            .add('a', Echo, {}, { deps: ['c'] })
            .add('b', Echo, {}, { deps: ['a'] })
            .add('c', Echo, {}, { deps: ['b'] }),
        /cycle/,
      ],
      ['bad input', () => durable.flow().add('a', Echo, { n: BigInt(1) }), /BigInt/],
      ['bad name', () => durable.flow().add('', Echo), /node name/],
      ['NUL in a node name', () => durable.flow().add('a\u0000b', Echo), /node name/],
      ['a lone surrogate in a node name', () => durable.flow().add('a\uD800', Echo), /node name/],
      ['bad id', () => durable.flow({ id: '' }).add('a', Echo), /flow id/],
      ['NUL in the flow id', () => durable.flow({ id: 'f\u0000' }).add('a', Echo), /flow id/],
      ['a lone surrogate in the flow name', () => durable.flow({ name: 'n\uDC00' }).add('a', Echo), /flow name/],
      ['an empty dep', () => durable.flow().add('a', Echo, {}, { deps: [''] }), /deps must be an array of node names/],
    ];
    for (const [what, build, message] of cases) {
      const err = await durable.startFlow(build()).catch((e) => e);
      expect([what, err]).toEqual([what, expect.any(DurableValidationError)]);
      expect([what, err.message]).toEqual([what, expect.stringMatching(message)]);
      // each problem named (the HTTP answer's errors)
      expect([what, err.errors.length > 0]).toEqual([what, true]);
    }
    // several problems are listed together
    const many = await durable
      .startFlow(
        durable
          .flow()
          .add('a', Echo)
          .add('a', 'nope', {}, { deps: ['x'] }),
      )
      .catch((e) => e);
    expect(many.errors.length).toBeGreaterThanOrEqual(3);
    const n = await sql(`select count(*)::int as n from ${ident(schema)}.runs`);
    expect(n[0].n).toBe(0);
    expect((await sql(`select count(*)::int as n from ${ident(schema)}.flows`))[0].n).toBe(0);
  });

  it("joins the caller's transaction: a rollback removes the whole flow, a commit keeps it", async () => {
    const ds = new DataSource({ type: 'postgres', url: databaseUrl() });
    await ds.initialize();
    try {
      const { durable, schema } = await createApp({ workflows, options: { dataSource: ds, worker: false } });
      const flowA = durable
        .flow({ id: 'rolled-back' })
        .add('a', Echo)
        .add('b', Echo, {}, { deps: ['a'] });
      await ds
        .transaction(async (manager) => {
          const r = await durable.startFlow(flowA, { manager });
          expect(Object.keys(r.runIds)).toEqual(['a', 'b']);
          throw new Error('roll back');
        })
        .catch(() => undefined);
      expect(await durable.listRuns({ flowId: 'rolled-back' })).toHaveLength(0);
      expect((await sql(`select count(*)::int as n from ${ident(schema)}.flows`))[0].n).toBe(0);
      // a duplicate id inside the caller's transaction neither throws a SQL error nor poisons it
      await durable.startFlow(durable.flow({ id: 'taken' }).add('a', Echo));
      await ds.transaction(async (manager) => {
        const err = await durable.startFlow(durable.flow({ id: 'taken' }).add('a', Echo), { manager }).catch((e) => e);
        expect(err).toBeInstanceOf(FlowExistsError);
        await durable.startFlow(
          durable
            .flow({ id: 'kept' })
            .add('a', Echo)
            .add('b', Echo, {}, { deps: ['a'] }),
          { manager },
        );
      });
      expect(await durable.listRuns({ flowId: 'kept' })).toHaveLength(2);
    } finally {
      await ds.destroy();
    }
  });

  it('getFlowGraph draws a started flow with run ids and statuses; unknown flows are RunNotFoundError', async () => {
    const { durable } = await createApp({ workflows, options: { worker: false } });
    const { flowId, runIds } = await durable.startFlow(
      durable
        .flow({ name: 'drawn' })
        .add('a', Echo)
        .add('b', Echo, {}, { deps: ['a'] })
        .add('c', Echo, {}, { deps: ['a'] }),
    );
    const g = await durable.getFlowGraph(flowId);
    expect(g.nodes).toEqual([
      { name: 'a', workflow: 'flow_echo', deps: [], runId: runIds.a, status: 'pending' },
      { name: 'b', workflow: 'flow_echo', deps: ['a'], runId: runIds.b, status: 'waiting' },
      { name: 'c', workflow: 'flow_echo', deps: ['a'], runId: runIds.c, status: 'waiting' },
    ]);
    const m = g.toMermaid();
    expect(m.startsWith('flowchart TD\n    a[flow_echo] --> b[flow_echo]\n    a[flow_echo] --> c[flow_echo]\n')).toBe(true);
    expect(m).toContain('class a pending');
    expect(g.toDot()).toContain('"a" -> "b";');
    await expect(durable.getFlowGraph('nope')).rejects.toBeInstanceOf(RunNotFoundError);
    await expect(durable.appendFlow('nope')).rejects.toBeInstanceOf(RunNotFoundError);
  });
});
