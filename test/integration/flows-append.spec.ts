import { DurableService, DurableValidationError, OnFlowCancelled, RunContext, RunInfo, RunNotFoundError, Step, Workflow } from '../../src';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { createApp, databaseUrl, ident, sql, waitFor, waitForLockWait } from '../support';

const order: string[] = [];
const hookCalls: { reason: string; name: string | null }[] = [];

@Workflow('app_echo')
class Echo implements OnFlowCancelled {
  @Step()
  async run(ctx: RunContext) {
    order.push(ctx.flow!.name);
    return ctx.flow!.name;
  }

  afterCancelled(reason: 'cancelled' | 'failed' | 'deleted', run: RunInfo) {
    hookCalls.push({ reason, name: run.name });
  }
}

@Workflow('app_fail', { retry: { attempts: 1 } })
class Fail {
  @Step()
  async run() {
    throw new Error('nope');
  }
}

/** The spec's WorkflowWorker: appends d, e, f depending on a, b, c from inside a step. */
@Workflow('app_appender')
class Appender {
  constructor(private readonly durable: DurableService) {}

  @Step()
  async run(ctx: RunContext<{ checkDeps?: boolean }>) {
    order.push(ctx.flow!.name);
    const flow = await this.durable.appendFlow(ctx.flow!.flowId, { checkDeps: ctx.input?.checkDeps ?? true });
    const { runIds } = await this.durable.startFlow(
      flow
        .add('d', Echo, {}, { deps: ['a'] })
        .add('e', Echo, {}, { deps: ['b'] })
        .add('f', Echo, {}, { deps: ['c'] }),
    );
    return Object.keys(runIds);
  }
}

const workflows = [Echo, Fail, Appender];
const FINAL = ['completed', 'failed', 'cancelled'];

async function finalRun(durable: DurableService, id: string, timeout = 15_000) {
  return waitFor(
    async () => {
      const r = await durable.getRun(id);
      return r && FINAL.includes(r.status) ? r : undefined;
    },
    { timeout, message: `run ${id} finished` },
  );
}

async function runsByName(durable: DurableService, flowId: string) {
  return Object.fromEntries((await durable.listRuns({ flowId, limit: 1000 })).map((r) => [r.name!, r]));
}

describe('DAG flows: appendFlow', () => {
  beforeEach(() => {
    order.length = 0;
    hookCalls.length = 0;
  });

  it('appends from inside a step (the spec example), with deps on existing nodes checked', async () => {
    const { durable } = await createApp({ workflows });
    const { flowId } = await durable.startFlow(
      durable
        .flow({ name: 'grow' })
        .add('a', Echo)
        .add('b', Echo)
        .add('c', Appender, {}, { deps: ['a', 'b'] }),
    );
    // ~5 s on an idle machine; a loaded CI round has taken more than 10
    await waitFor(
      async () => {
        const r = await runsByName(durable, flowId);
        return Object.keys(r).length === 6 && Object.values(r).every((x) => x.status === 'completed');
      },
      { timeout: 40_000 },
    );
    const runs = await runsByName(durable, flowId);
    expect(runs.c.result).toEqual(['d', 'e', 'f']);
    expect(runs.f.deps).toEqual(['c']);
    expect(runs.d.flowName).toBe('grow');
    // f depended on c, which was running when f was appended: it ran after c finished
    expect(runs.f.startedAt!.getTime()).toBeGreaterThanOrEqual(runs.c.finishedAt!.getTime());
    const g = await durable.getFlowGraph(flowId);
    expect(g.toMermaid()).toContain('c[app_appender] --> f[app_echo]');
  });

  it('appended nodes whose deps already finished resolve at once: completed → runs, failed → cancelled with the hook', async () => {
    const { durable } = await createApp({ workflows });
    const { flowId, runIds } = await durable.startFlow(durable.flow().add('ok', Echo).add('bad', Fail));
    await finalRun(durable, runIds.ok);
    await finalRun(durable, runIds.bad);
    const more = await durable.startFlow(
      (await durable.appendFlow(flowId))
        .add('after_ok', Echo, {}, { deps: ['ok'] })
        .add('after_bad', Echo, {}, { deps: ['bad'] })
        .add('after_bad_ignored', Echo, {}, { deps: ['bad'], ignoreFailed: true }),
    );
    expect(more.flowId).toBe(flowId);
    expect((await finalRun(durable, more.runIds.after_ok)).status).toBe('completed');
    expect((await finalRun(durable, more.runIds.after_bad)).status).toBe('cancelled');
    expect((await finalRun(durable, more.runIds.after_bad_ignored)).status).toBe('completed');
    await waitFor(() => hookCalls.length === 1);
    expect(hookCalls[0]).toEqual({ reason: 'failed', name: 'after_bad' });
  });

  it('appended nodes inherit the flow-level ignore options', async () => {
    const { durable } = await createApp({ workflows });
    const { flowId, runIds } = await durable.startFlow(durable.flow({ ignoreFailed: true }).add('bad', Fail));
    await finalRun(durable, runIds.bad);
    const more = await durable.startFlow((await durable.appendFlow(flowId)).add('next', Echo, {}, { deps: ['bad'] }));
    expect((await finalRun(durable, more.runIds.next)).status).toBe('completed');
  });

  it('with checkDeps (the default) deps must name existing nodes and names must be new; nothing is written otherwise', async () => {
    const { durable, schema } = await createApp({ workflows, options: { worker: false } });
    const { flowId } = await durable.startFlow(durable.flow().add('a', Echo));
    const unknown = await durable.startFlow((await durable.appendFlow(flowId)).add('b', Echo, {}, { deps: ['zz'] })).catch((e) => e);
    expect(unknown).toBeInstanceOf(DurableValidationError);
    expect(unknown.message).toMatch(/depends on "zz", which is not a node of flow/);
    const dup = await durable.startFlow((await durable.appendFlow(flowId)).add('a', Echo)).catch((e) => e);
    expect(dup).toBeInstanceOf(DurableValidationError);
    expect(dup.message).toMatch(/node "a" already exists/);
    expect(await durable.listRuns({ flowId })).toHaveLength(1);
    expect((await sql(`select count(*)::int n from ${ident(schema)}.flow_deps`))[0].n).toBe(0);
  });

  it("a refused append inside the caller's transaction writes nothing and lets the flow and its nodes go at once", async () => {
    const { durable, schema } = await createApp({ workflows, options: { worker: false } });
    const S = ident(schema);
    const { flowId, runIds } = await durable.startFlow(durable.flow().add('a', Echo));
    const [{ at }] = await sql<{ at: Date }>(`select updated_at as at from ${S}.flows where id = $1`, [flowId]);
    const ds = new DataSource({ type: 'postgres', url: databaseUrl() });
    await ds.initialize();
    const other = new Client({ connectionString: databaseUrl() });
    await other.connect();
    try {
      await ds.transaction(async (manager) => {
        const refused = (await durable.appendFlow(flowId)).add('a', Echo).add('b', Echo, {}, { deps: ['a'] });
        await expect(durable.startFlow(refused, { manager })).rejects.toBeInstanceOf(DurableValidationError);
        // while the caller's transaction goes on, nothing of the append holds a row
        await other.query('BEGIN');
        await other.query(`SELECT 1 FROM ${S}.flows WHERE id = $1 FOR UPDATE NOWAIT`, [flowId]);
        await other.query(`SELECT 1 FROM ${S}.runs WHERE id = $1 FOR UPDATE NOWAIT`, [runIds.a]);
        await other.query('ROLLBACK');
        await manager.query('SELECT 1');
      });
      expect((await sql<{ at: Date }>(`select updated_at as at from ${S}.flows where id = $1`, [flowId]))[0].at).toEqual(at);
    } finally {
      await other.end();
      await ds.destroy();
    }
  });

  it('an id no flow can have is not found; checkDeps must be a boolean; a dep name no node can have is refused even without checkDeps', async () => {
    const { durable } = await createApp({ workflows: [Echo] });
    for (const id of ['', 'f\u0000', 'x'.repeat(300)]) {
      await expect(durable.appendFlow(id)).rejects.toBeInstanceOf(RunNotFoundError);
      await expect(durable.getFlowGraph(id)).rejects.toBeInstanceOf(RunNotFoundError);
      await expect(durable.rerunFlow(id, { from: 'a' })).rejects.toBeInstanceOf(RunNotFoundError);
    }
    const { flowId } = await durable.startFlow(durable.flow().add('a', Echo));
    await expect(durable.appendFlow(flowId, { checkDeps: 'no' as never })).rejects.toThrow(/checkDeps must be a boolean/);
    for (const dep of ['', 'd'.repeat(8_000)]) {
      const flow = (await durable.appendFlow(flowId, { checkDeps: false })).add('b', Echo, {}, { deps: [dep] });
      await expect(durable.startFlow(flow)).rejects.toBeInstanceOf(DurableValidationError);
    }
    expect((await durable.getFlowGraph(flowId)).nodes.map((n) => n.name)).toEqual(['a']);
  });

  it('without checkDeps a dep may name a node added later: the node waits for it', async () => {
    // a grace of the repair rule (nodeTimeout) longer than the two appends can take, also under load
    const { durable } = await createApp({ workflows, options: { nodeTimeout: '10s' } });
    const { flowId, runIds } = await durable.startFlow(durable.flow().add('a', Echo));
    await finalRun(durable, runIds.a);
    const early = await durable.startFlow((await durable.appendFlow(flowId, { checkDeps: false })).add('late_child', Echo, {}, { deps: ['a', 'later'] }));
    expect((await durable.getRun(early.runIds.late_child))!.status).toBe('waiting');
    const later = await durable.startFlow((await durable.appendFlow(flowId)).add('later', Echo));
    expect((await finalRun(durable, early.runIds.late_child)).status).toBe('completed');
    expect(order.indexOf('later')).toBeLessThan(order.indexOf('late_child'));
    expect(later.flowId).toBe(flowId);
  });

  it('without checkDeps, a dep that never appears counts as deleted once the flow is quiet (repair rule)', async () => {
    // nodeTimeout is 1s in the tests: the grace period of the rule
    const { durable, schema } = await createApp({ workflows });
    const { flowId, runIds } = await durable.startFlow(durable.flow().add('a', Echo));
    await finalRun(durable, runIds.a);
    const { runIds: more } = await durable.startFlow(
      (await durable.appendFlow(flowId, { checkDeps: false }))
        .add('orphan', Echo, {}, { deps: ['ghost'] })
        .add('orphan_ok', Echo, {}, { deps: ['ghost'], ignoreDeleted: true })
        .add('downstream', Echo, {}, { deps: ['orphan'] }),
    );
    expect(await finalRun(durable, more.orphan)).toMatchObject({ status: 'cancelled', error: expect.objectContaining({ reason: 'deleted' }) });
    // not before the flow was quiet for the grace, on the database's clock: from the newest of its runs
    const [{ quiet_ms }] = await sql<{ quiet_ms: number }>(
      `SELECT extract(epoch FROM o.finished_at - (SELECT max(r.created_at) FROM ${ident(schema)}.runs r WHERE r.flow_id = o.flow_id))::float8 * 1000 AS quiet_ms
       FROM ${ident(schema)}.runs o WHERE o.id = $1`,
      [more.orphan],
    );
    expect(quiet_ms).toBeGreaterThanOrEqual(1000);
    expect((await finalRun(durable, more.orphan_ok)).status).toBe('completed');
    expect((await finalRun(durable, more.downstream)).status).toBe('cancelled');
    await waitFor(() => hookCalls.length === 2);
    expect(hookCalls.map((h) => `${h.name}:${h.reason}`).sort()).toEqual(['downstream:cancelled', 'orphan:deleted']);
    expect((await sql(`select count(*)::int n from ${ident(schema)}.flow_deps where not resolved`))[0].n).toBe(0);
  });

  it("an append that would close a cycle through the flow's nodes is refused before anything is written", async () => {
    const { durable, schema } = await createApp({ workflows, options: { worker: false } });
    const { flowId } = await durable.startFlow(durable.flow().add('root', Echo));
    // x waits for "later", which does not exist yet; y waits for x
    const more = await durable.startFlow(
      (await durable.appendFlow(flowId, { checkDeps: false })).add('x', Echo, {}, { deps: ['root', 'later'] }).add('y', Echo, {}, { deps: ['x'] }),
    );
    const nodes = async () => (await sql(`select count(*)::int n from ${ident(schema)}.runs where flow_id = $1`, [flowId]))[0].n;
    for (const deps of [['x'], ['y'], ['root', 'y']]) {
      const err = await durable.startFlow((await durable.appendFlow(flowId)).add('later', Echo, {}, { deps })).catch((e) => e);
      expect(err).toBeInstanceOf(DurableValidationError);
      expect(String(err.message)).toMatch(/cycle through the flow's nodes: later → (.* → )?x( → .*)? → later$/);
      expect(await nodes()).toBe(3);
    }
    // a "later" that closes no cycle is appended, and x then waits only for root
    const ok = await durable.startFlow((await durable.appendFlow(flowId)).add('later', Echo, {}, { deps: ['root'] }));
    expect(await nodes()).toBe(4);
    expect((await durable.getRun(ok.runIds.later))!.status).toBe('waiting');
    expect((await durable.getRun(more.runIds.x))!.status).toBe('waiting');
  });

  it('the repair of a quiet flow is not crowded out by the missing deps of busy flows', async () => {
    const schema = `${(await createApp({ workflows, options: { worker: false } })).schema}`;
    const starter = (await createApp({ schema, workflows, options: { worker: false, migrationsRun: false } })).durable;
    const S = ident(schema);
    // a busy flow (its first node stays pending: no worker runs app_echo) with 150 deps that never appear
    const busy = await starter.startFlow(starter.flow().add('busy', Echo));
    const ghosts = Array.from({ length: 150 }, (_, i) => `ghost${i}`);
    const busyMore = await starter.startFlow((await starter.appendFlow(busy.flowId, { checkDeps: false })).add('waits', Echo, {}, { deps: ghosts }));
    // a quiet flow, made after it: its node finished long ago, one dep never appeared
    const quiet = await starter.startFlow(starter.flow().add('a', Echo));
    const quietMore = await starter.startFlow((await starter.appendFlow(quiet.flowId, { checkDeps: false })).add('orphan', Echo, {}, { deps: ['ghost'] }));
    await sql(`UPDATE ${S}.runs SET status = 'completed', finished_at = now() - interval '1 hour' WHERE id = $1`, [quiet.runIds.a]);
    await sql(`UPDATE ${S}.runs SET created_at = now() - interval '1 hour' WHERE flow_id = ANY($1)`, [[quiet.flowId, busy.flowId]]);
    await sql(`UPDATE ${S}.flows SET updated_at = now() - interval '1 hour' WHERE id = ANY($1)`, [[quiet.flowId, busy.flowId]]);
    // a worker node that runs none of these nodes: only its maintenance pass acts
    await createApp({ schema, workflows, options: { worker: { workflows: ['app_fail'] }, migrationsRun: false } });
    const orphan = await waitFor(
      async () => {
        const r = await starter.getRun(quietMore.runIds.orphan);
        return r?.status === 'cancelled' ? r : undefined;
      },
      { timeout: 15_000, message: 'the quiet flow was repaired' },
    );
    expect(orphan.error).toMatchObject({ reason: 'deleted' });
    // the busy flow is left alone
    expect((await starter.getRun(busyMore.runIds.waits))!.status).toBe('waiting');
    expect((await starter.getRun(busy.runIds.busy))!.status).toBe('pending');
  });

  it('an append racing its dep finishing never loses the wake-up (the dep waits for the append to commit)', async () => {
    const ds = new DataSource({ type: 'postgres', url: databaseUrl() });
    await ds.initialize();
    const other = new Client({ connectionString: databaseUrl() });
    await other.connect();
    try {
      const { durable, schema } = await createApp({ workflows, options: { dataSource: ds, worker: false } });
      const S = ident(schema);
      const { flowId, runIds } = await durable.startFlow(durable.flow().add('a', Echo));
      await sql(`update ${S}.runs set status = 'running' where id = $1`, [runIds.a]);
      const [{ pid }] = (await other.query('select pg_backend_pid() as pid')).rows;
      let finishing: Promise<unknown> | undefined;
      let appended: Record<string, string> = {};
      await ds.transaction(async (manager) => {
        const r = await durable.startFlow((await durable.appendFlow(flowId)).add('b', Echo, {}, { deps: ['a'] }), { manager });
        appended = r.runIds;
        // another connection finishes `a` while the append is not committed yet: it must wait for it
        finishing = other.query(`update ${S}.runs set status = 'completed', finished_at = now() where id = $1`, [runIds.a]);
        await waitFor(async () => {
          const rows = await sql(`select wait_event_type from pg_stat_activity where pid = $1`, [pid]);
          return rows[0]?.wait_event_type === 'Lock';
        });
      });
      await finishing;
      expect((await durable.getRun(appended.b))!.status).toBe('pending');
    } finally {
      await other.end();
      await ds.destroy();
    }
  });

  it('…and the other way round: an append waits for a dep finishing in an open transaction, then resolves it', async () => {
    const other = new Client({ connectionString: databaseUrl() });
    await other.connect();
    try {
      const { durable, schema } = await createApp({ workflows, options: { worker: false } });
      const S = ident(schema);
      const { flowId, runIds } = await durable.startFlow(durable.flow().add('a', Echo));
      await other.query('BEGIN');
      await other.query(`update ${S}.runs set status = 'completed', finished_at = now() where id = $1`, [runIds.a]);
      const appending = durable.startFlow((await durable.appendFlow(flowId)).add('b', Echo, {}, { deps: ['a'] }));
      await waitForLockWait(['FOR SHARE', schema], 'the append waits for the dep row locked by the other transaction');
      await other.query('COMMIT');
      const { runIds: more } = await appending;
      expect((await durable.getRun(more.b))!.status).toBe('pending');
    } finally {
      await other.end();
    }
  });
});
