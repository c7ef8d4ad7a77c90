import { Client } from 'pg';
import { DurableValidationError, RunContext, Step, Workflow } from '../../src';
import { FlowsStore } from '../../src/store/flows.store';
import { runsMaintenanceStatements } from '../../src/store/runs.maintenance.sql';
import { createApp, databaseUrl, ident, sql } from '../support';

@Workflow('bounds_noop')
class Noop {
  @Step()
  async run() {
    return null;
  }
}

@Workflow('bounds_echo')
class Echo {
  @Step()
  async run(ctx: RunContext) {
    return ctx.flow?.name ?? null;
  }
}

@Workflow('bounds_timed', { timeout: '1h' })
class Timed {
  @Step()
  async run() {
    return null;
  }
}

const workflows = [Noop, Echo, Timed];

/** The plan of statement `name` of the runs store's maintenance on `schema`, run (and rolled back) with `params` (SQL literals). */
async function planOf(schema: string, name: string, types: string, params: string[]): Promise<string> {
  const client = new Client({ connectionString: databaseUrl() });
  await client.connect();
  try {
    await client.query('BEGIN');
    await client.query(`PREPARE probe (${types}) AS ${runsMaintenanceStatements(ident(schema))[name]}`);
    const rows = await client.query(`EXPLAIN (ANALYZE, COSTS false, TIMING false) EXECUTE probe (${params.join(', ')})`);
    return rows.rows.map((r) => r['QUERY PLAN']).join('\n');
  } finally {
    await client.query('ROLLBACK').catch(() => undefined);
    await client.end();
  }
}

/** The rows each scan of `runs` in `plan` read and threw away (`Rows Removed by Filter`), summed. */
function removedFromRuns(plan: string): number {
  let onRuns = false;
  let removed = 0;
  for (const line of plan.split('\n')) {
    if (/->|^\S/.test(line)) onRuns = / on runs\b/.test(line);
    const m = /Rows Removed by Filter: (\d+)/.exec(line);
    if (m && onRuns) removed += Number(m[1]);
  }
  return removed;
}

/** Counts the rows of the flow's nodes an append reads to look for a cycle (`FlowsStore.upstream`). */
async function upstreamRowsRead<T>(fn: () => Promise<T>): Promise<{ out: T; rows: number }> {
  const upstream = FlowsStore.prototype.upstream;
  let rows = 0;
  FlowsStore.prototype.upstream = async function (this: FlowsStore, ...args: Parameters<typeof upstream>) {
    const got = await upstream.apply(this, args);
    rows += got.length;
    return got;
  };
  try {
    return { out: await fn(), rows };
  } finally {
    FlowsStore.prototype.upstream = upstream;
  }
}

describe('DAG flows: what an append costs', () => {
  it("an append to a large flow reads only its own deps, not every node upstream of them (no node waits for the batch's names)", async () => {
    const { durable } = await createApp({ workflows, options: { worker: false } });
    let flow = durable.flow({ name: 'wide' });
    const parts: string[] = [];
    for (let i = 0; i < 3_000; i++) {
      const name = `part_${String(i).padStart(4, '0')}`;
      parts.push(name);
      flow = flow.add(name, Noop, { i });
    }
    const { flowId } = await durable.startFlow(flow.add('collect', Noop, {}, { deps: parts }));
    // the usual dynamic flow: each append waits for the node before it
    let last = 'collect';
    for (let i = 0; i < 3; i++) {
      const name = `after_${i}`;
      const { out, rows } = await upstreamRowsRead(async () => durable.startFlow((await durable.appendFlow(flowId)).add(name, Echo, {}, { deps: [last] })));
      expect(Object.keys(out.runIds)).toEqual([name]);
      expect(rows).toBeLessThanOrEqual(1);
      last = name;
    }
    expect((await durable.getFlowGraph(flowId)).nodes).toHaveLength(3_004);
  });

  it('an append whose names a node of the flow waits for still has its cycle found through the flow', async () => {
    const { durable } = await createApp({ workflows, options: { worker: false } });
    const { flowId } = await durable.startFlow(
      durable
        .flow()
        .add('root', Echo)
        .add('mid', Echo, {}, { deps: ['root'] }),
    );
    await durable.startFlow((await durable.appendFlow(flowId, { checkDeps: false })).add('x', Echo, {}, { deps: ['mid', 'later'] }));
    const err = await durable
      .startFlow((await durable.appendFlow(flowId)).add('y', Echo, {}, { deps: ['x'] }).add('later', Echo, {}, { deps: ['y'] }))
      .catch((e) => e);
    expect(err).toBeInstanceOf(DurableValidationError);
    expect(String(err.message)).toMatch(/close a cycle through the flow's nodes: (later|x|y) → (later|x|y) → (later|x|y) → (later|x|y)$/);
    // without the cycle the same names go in
    const ok = await durable.startFlow((await durable.appendFlow(flowId)).add('later', Echo, {}, { deps: ['mid'] }));
    expect(Object.keys(ok.runIds)).toEqual(['later']);
  });

  it('the timeout sweep does not read the nodes that wait for their deps, however long they have waited', async () => {
    const { durable, schema } = await createApp({ workflows, options: { worker: false } });
    const S = ident(schema);
    let flow = durable.flow().add('root', Noop);
    for (let i = 0; i < 2_000; i++) flow = flow.add(`timed_${i}`, Timed, { i }, { deps: ['root'] });
    const { flowId, runIds } = await durable.startFlow(flow);
    // the flow has waited two hours for its root, past the nodes' workflow timeout (1 h)
    await sql(`UPDATE ${S}.runs SET run_at = run_at - interval '2 hours', created_at = created_at - interval '2 hours' WHERE flow_id = $1`, [flowId]);
    // and a history of finished runs with a timeout
    await sql(`
      INSERT INTO ${S}.runs (id, workflow, status, timeout_ms, run_at, finished_at)
      SELECT gen_random_uuid(), 'bounds_timed', 'completed', 3600000, now() - interval '2 days', now() - interval '1 day'
      FROM generate_series(1, 20000)`);
    await sql(`ANALYZE ${S}.runs`);
    const plan = await planOf(schema, 'timeouts', 'text[], int, jsonb, jsonb, text', ["ARRAY['bounds_timed']", '1000', "'{}'", "'{}'", "'%s'"]);
    expect(plan).not.toMatch(/Seq Scan on runs/);
    expect(removedFromRuns(plan)).toBeLessThan(10);
    // and none of them timed out
    expect((await durable.getRun(runIds.timed_0))!.status).toBe('waiting');
  });
});

describe('DAG flows: what pruning flow rows costs', () => {
  it('a pass reads a page of the old flow rows, not every old flow whose runs are kept: each is read about once a round', async () => {
    const { schema } = await createApp({ workflows, options: { worker: false } });
    const S = ident(schema);
    // 15,000 flows untouched for 40 days whose runs are kept (key tombstones, long waits), then 10 without runs
    await sql(`
      INSERT INTO ${S}.flows (id, updated_at, created_at)
      SELECT 'kept-' || i, now() - interval '40 days' - (20000 - i) * interval '1 second', now() - interval '40 days' FROM generate_series(1, 15000) i`);
    await sql(`
      INSERT INTO ${S}.runs (id, workflow, status, flow_id, name, finished_at)
      SELECT gen_random_uuid(), 'bounds_noop', 'completed', 'kept-' || i, 'n', now() FROM generate_series(1, 15000) i`);
    await sql(`
      INSERT INTO ${S}.flows (id, updated_at, created_at)
      SELECT 'gone-' || i, now() - interval '35 days' - i * interval '1 second', now() - interval '40 days' FROM generate_series(1, 10) i`);
    await sql(`ANALYZE ${S}.flows`);
    await sql(`ANALYZE ${S}.runs`);
    const store = new FlowsStore(schema, `durable_${schema}`);
    const pool = new Client({ connectionString: databaseUrl() });
    await pool.connect();
    try {
      let read = 0;
      // runs each statement twice: explained (rolled back), then for real
      const q = {
        query: async (text: string, values: unknown[] = []) => {
          await pool.query('BEGIN');
          const plan = (await pool.query(`EXPLAIN (ANALYZE, COSTS false, TIMING false) ${text}`, values)).rows.map((r) => r['QUERY PLAN']).join('\n');
          await pool.query('ROLLBACK');
          for (const m of plan.matchAll(/Scan[^\n]* on flows\b[^\n]*\(actual rows=(\d+) loops=(\d+)\)/g)) read = Math.max(read, Number(m[1]) * Number(m[2]));
          return (await pool.query(text, values)).rows;
        },
      };
      let pruned = 0;
      let after: Awaited<ReturnType<FlowsStore['pruneFlows']>>['next'] = null;
      let passes = 0;
      let total = 0;
      do {
        read = 0;
        const out = await store.pruneFlows(q as never, 30 * 86_400_000, 1000, after);
        pruned += out.n;
        after = out.next;
        passes++;
        total += read;
        expect(read).toBeLessThanOrEqual(5000); // a page, or the few left at the end of a round
      } while (after !== null && passes < 30);
      // one round: 16 pages of 1,000, each flow read about once
      expect(passes).toBeLessThanOrEqual(17);
      expect(total).toBeLessThanOrEqual(1.5 * 15_010);
      expect(pruned).toBe(10);
      const left = await sql(`select count(*)::int n, count(*) filter (where id like 'gone-%')::int gone from ${S}.flows`);
      expect(left[0]).toEqual({ n: 15_000, gone: 0 });
    } finally {
      await pool.end();
    }
  });
});
