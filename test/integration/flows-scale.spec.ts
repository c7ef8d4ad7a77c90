import { Client } from 'pg';
import { RunContext, RunInfo, Step, Workflow } from '../../src';
import { FlowsStore } from '../../src/store/flows.store';
import { createApp, databaseUrl, freshSchema, Gate, ident, sql, waitFor } from '../support';

let gate = new Gate();
let childRuns = 0;
const streamed: { count: number; names: number; pages: number; first?: string; last?: string }[] = [];

@Workflow('scale_parent')
class Parent {
  @Step()
  async run(ctx: RunContext) {
    await gate.wait(ctx.signal);
    return ctx.flow!.name;
  }
}

@Workflow('scale_child')
class Child {
  @Step()
  async run(ctx: RunContext) {
    childRuns++;
    const recorded = await ctx.flow!.allRecorded({ onlyDeps: true });
    return Object.keys(recorded).length;
  }
}

@Workflow('scale_noop')
class Noop {
  @Step()
  async run() {
    return null;
  }
}

@Workflow('scale_reader')
class Reader {
  @Step()
  async run(ctx: RunContext) {
    const page = FlowsStore.prototype.page;
    let pages = 0;
    const names = new Set<string>();
    let count = 0;
    let first: string | undefined;
    let last: string | undefined;
    // count round trips (the stream must page, not load 10,000 rows at once)
    FlowsStore.prototype.page = function (this: FlowsStore, ...args: Parameters<typeof page>) {
      pages++;
      return page.apply(this, args);
    };
    try {
      for await (const job of ctx.flow!.streamJobs({ pageSize: 1000 })) {
        count++;
        names.add(job.name!);
        first ??= job.name!;
        last = job.name!;
      }
    } finally {
      FlowsStore.prototype.page = page;
    }
    streamed.push({ count, names: names.size, pages, first, last });
    return count;
  }
}

const FINAL = ['completed', 'failed', 'cancelled'];

async function finalRun(durable: { getRun(id: string): Promise<RunInfo | null> }, id: string, timeout = 30_000) {
  return waitFor(
    async () => {
      const r = await durable.getRun(id);
      return r && FINAL.includes(r.status) ? r : undefined;
    },
    { timeout, message: `run ${id} finished` },
  );
}

describe('DAG flows at scale', () => {
  beforeEach(() => {
    gate = new Gate();
    childRuns = 0;
    streamed.length = 0;
  });

  it('exact fan-in: 20 parents finishing at once on 4 nodes make the child claimable exactly once', async () => {
    const schema = freshSchema();
    const apps = [];
    for (let i = 0; i < 4; i++) apps.push(await createApp({ workflows: [Parent, Child], schema, concurrency: 5 }));
    const { durable } = apps[0];
    let flow = durable.flow({ name: 'fan-in-20' });
    const parents = Array.from({ length: 20 }, (_, i) => `p${i}`);
    for (const p of parents) flow = flow.add(p, Parent);
    flow = flow.add('child', Child, {}, { deps: parents });
    const { runIds } = await durable.startFlow(flow);
    // all 20 parents are running (spread over the 4 nodes) before any may finish
    await waitFor(() => gate.arrived === 20, { timeout: 20_000 });
    const nodes = await sql(`select count(distinct node_id)::int n from ${ident(schema)}.runs where status = 'running'`);
    expect(nodes[0].n).toBeGreaterThan(1);
    expect((await durable.getRun(runIds.child))!.status).toBe('waiting');
    gate.open();
    const child = await finalRun(durable, runIds.child);
    expect(child).toMatchObject({ status: 'completed', result: 20, attempt: 1 });
    expect(childRuns).toBe(1);
    const [row] = await sql(`select deps_left, epoch from ${ident(schema)}.runs where id = $1`, [runIds.child]);
    expect(row).toEqual({ deps_left: 0, epoch: 1 });
  });

  it('exact fan-in at the SQL level: 20 connections commit their parent at the same moment', async () => {
    const { durable, schema } = await createApp({ workflows: [Parent, Child], options: { worker: false } });
    const S = ident(schema);
    let flow = durable.flow();
    const parents = Array.from({ length: 20 }, (_, i) => `p${i}`);
    for (const p of parents) flow = flow.add(p, Parent);
    flow = flow.add('child', Child, {}, { deps: parents });
    const { runIds } = await durable.startFlow(flow);
    const clients = await Promise.all(
      parents.map(async () => {
        const c = new Client({ connectionString: databaseUrl() });
        await c.connect();
        return c;
      }),
    );
    // capture every status the child goes through
    await sql(`create table ${S}.child_log (status text, deps_left int)`);
    await sql(`
      create function ${S}.log_child() returns trigger language plpgsql as $$
      begin insert into ${S}.child_log values (NEW.status, NEW.deps_left); return null; end $$`);
    await sql(`create trigger log_child after update on ${S}.runs for each row when (NEW.name = 'child') execute function ${S}.log_child()`);
    try {
      // every connection has its transaction open; then all finish their parent at once (they
      // serialise on the child's row lock inside the trigger, each seeing the previous count)
      await Promise.all(clients.map((c) => c.query('BEGIN')));
      await Promise.all(
        clients.map(async (c, i) => {
          await c.query(`update ${S}.runs set status = 'completed', finished_at = now() where id = $1`, [runIds[parents[i]]]);
          await c.query('COMMIT');
        }),
      );
    } finally {
      await Promise.all(clients.map((c) => c.end()));
    }
    const log = await sql(`select status, deps_left from ${S}.child_log`);
    expect(log).toHaveLength(20);
    expect(log.filter((l) => l.status === 'pending')).toEqual([{ status: 'pending', deps_left: 0 }]);
    expect([...log.map((l) => l.deps_left)].sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => i));
    expect((await durable.getRun(runIds.child))!.status).toBe('pending');
  });

  it('a 10,000-node flow: inserted in one transaction, streamed page by page from a step', async () => {
    // the worker runs only the reader: the 9,999 other nodes stay pending
    const { durable } = await createApp({ workflows: [Reader, Noop], options: { worker: { workflows: ['scale_reader'] } } });
    let flow = durable.flow({ name: 'ten-thousand' });
    for (let i = 0; i < 9_999; i++) flow = flow.add(`n${String(i).padStart(5, '0')}`, Noop, { i });
    flow = flow.add('reader', Reader);
    const t0 = Date.now();
    const { flowId, runIds } = await durable.startFlow(flow);
    const insertMs = Date.now() - t0;
    expect(Object.keys(runIds)).toHaveLength(10_000);
    const reader = await finalRun(durable, runIds.reader, 60_000);
    expect(reader.result).toBe(10_000);
    expect(streamed[0]).toEqual({ count: 10_000, names: 10_000, pages: 11, first: 'n00000', last: 'reader' });
    const page = await durable.listRuns({ flowId, limit: 1000 });
    expect(page).toHaveLength(1000);
    expect(insertMs).toBeLessThan(15_000);
  });
});
