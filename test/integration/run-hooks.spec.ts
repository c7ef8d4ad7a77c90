/**
 * Run lifecycle hooks (onRunCompleted, onRunFailed, onRunCancelled): called once per run after it
 * ends, recorded in the transaction that ends it (so a node killed between the end and the hook
 * leaves it to another node), retried with back-off when they throw; a workflow without hooks
 * writes nothing more per run.
 */
import { OnRunCancelled, OnRunCompleted, OnRunFailed, RunContext, RunInfo, Step, Workflow } from '../../src';
import { DurableTestEnv } from '../../src/testing';
import { createApp, db, freshSchema, ident, RecordingLogger, spawnNode, sql, waitFor } from '../support';

/** Hook calls seen in this process: `<hook> <runId> <status>`. */
let calls: string[] = [];
const callsOf = (runId: string) => calls.filter((c) => c.split(' ')[1] === runId);

@Workflow('hk_all')
class AllHooks implements OnRunCompleted, OnRunFailed, OnRunCancelled {
  @Step({ retry: { attempts: 1 } })
  async work(ctx: RunContext<{ outcome: 'complete' | 'fail' | 'wait' }>) {
    if (ctx.input.outcome === 'fail') throw new Error('failed on purpose');
    if (ctx.input.outcome === 'wait') await ctx.waitForEvent('never');
    return 'done';
  }

  onRunCompleted(run: RunInfo) {
    calls.push(`onRunCompleted ${run.id} ${run.status}`);
  }

  onRunFailed(run: RunInfo) {
    calls.push(`onRunFailed ${run.id} ${run.status}`);
  }

  async onRunCancelled(run: RunInfo) {
    calls.push(`onRunCancelled ${run.id} ${run.status}`);
  }

  /** A flow node's: cancelled because a dependency was `reason`. */
  afterCancelled(reason: string, run: RunInfo) {
    calls.push(`afterCancelled ${run.id} ${reason}`);
  }
}

@Workflow('hk_plain')
class NoHooks {
  @Step()
  async work() {
    return 'plain';
  }
}

/** Throws on its first two calls for a run, then returns. */
@Workflow('hk_flaky')
class FlakyHook implements OnRunCompleted {
  @Step()
  async work() {
    return 'ok';
  }

  onRunCompleted(run: RunInfo) {
    calls.push(`onRunCompleted ${run.id} ${run.status}`);
    if (callsOf(run.id).length <= 2) throw new Error(`hook down (${callsOf(run.id).length})`);
  }
}

/** The in-process twin of the fixture's `hooked` workflow (same name and step). */
@Workflow('hooked')
class Hooked implements OnRunCompleted {
  @Step()
  async work() {
    return { by: 'survivor' };
  }

  onRunCompleted(run: RunInfo) {
    calls.push(`onRunCompleted ${run.id} ${run.status}`);
  }
}

const owed = async (schema: string) => (await sql<{ n: number }>(`select count(*)::int n from ${ident(schema)}.flow_hooks`))[0].n;

describe('run lifecycle hooks', () => {
  beforeEach(() => {
    calls = [];
  });

  it('each hook is called exactly once per run, with the ended run: completed, failed, cancelled', async () => {
    const t = await createApp({ workflows: [AllHooks, NoHooks] });
    const ids = { complete: [] as string[], fail: [] as string[], wait: [] as string[] };
    for (let i = 0; i < 4; i++) {
      for (const outcome of ['complete', 'fail', 'wait'] as const) ids[outcome].push((await t.durable.start(AllHooks, { outcome })).runId);
    }
    await waitFor(async () => (await t.durable.countRuns({ workflow: AllHooks, status: 'waiting' })).count === 4, { message: 'four runs wait' });
    for (const id of ids.wait) await t.durable.cancel(id);
    await waitFor(async () => calls.length >= 12 && (await owed(t.schema)) === 0, { timeout: 15_000, message: 'twelve hooks called' });
    // one more run through the queue: no earlier hook is called a second time meanwhile
    const last = await t.durable.start(AllHooks, { outcome: 'complete' });
    await waitFor(() => callsOf(last.runId).length === 1, { timeout: 10_000 });
    for (const id of ids.complete) expect(callsOf(id)).toEqual([`onRunCompleted ${id} completed`]);
    for (const id of ids.fail) expect(callsOf(id)).toEqual([`onRunFailed ${id} failed`]);
    for (const id of ids.wait) expect(callsOf(id)).toEqual([`onRunCancelled ${id} cancelled`]);
    expect(calls).toHaveLength(13);
  });

  it('a run cancelled by cancelExisting owes onRunCancelled; a flow node cancelled by its failed dependency owes afterCancelled only', async () => {
    const t = await createApp({ workflows: [AllHooks] });
    const { runIds } = await t.durable.startFlow(
      t.durable
        .flow({ name: 'hooks' })
        .add('a', AllHooks, { outcome: 'fail' })
        .add('b', AllHooks, { outcome: 'complete' }, { deps: ['a'] }),
    );
    const holder = await t.durable.start(AllHooks, { outcome: 'wait' }, { key: 'k' });
    await waitFor(async () => (await t.durable.getRun(holder.runId))?.status === 'waiting', { message: 'the holder waits' });
    const replacement = await t.durable.start(AllHooks, { outcome: 'complete' }, { key: 'k', onDuplicate: 'cancelExisting' });
    expect(replacement.outcome).toBe('cancelExisting');
    await waitFor(() => [runIds.a, runIds.b, holder.runId, replacement.runId].every((id) => callsOf(id).length === 1), { timeout: 15_000 });
    // every hook owed is called once its row is gone: none is left to come
    await waitFor(async () => (await owed(t.schema)) === 0, { message: 'every owed hook called' });
    expect(await t.durable.getRun(runIds.b)).toMatchObject({ status: 'cancelled' });
    expect(callsOf(runIds.a)).toEqual([`onRunFailed ${runIds.a} failed`]);
    expect(callsOf(runIds.b)).toEqual([`afterCancelled ${runIds.b} failed`]);
    expect(callsOf(holder.runId)).toEqual([`onRunCancelled ${holder.runId} cancelled`]);
    expect(callsOf(replacement.runId)).toEqual([`onRunCompleted ${replacement.runId} completed`]);
  });

  it('a flow node cancelled by cancel owes onRunCancelled', async () => {
    const t = await createApp({ workflows: [AllHooks] });
    const { runIds } = await t.durable.startFlow(
      t.durable
        .flow({ name: 'hooks-cancel' })
        .add('a', AllHooks, { outcome: 'wait' })
        .add('b', AllHooks, { outcome: 'complete' }, { deps: ['a'] }),
    );
    await waitFor(async () => (await t.durable.getRun(runIds.a))?.status === 'waiting', { message: 'a waits' });
    await t.durable.cancel(runIds.b);
    await waitFor(() => callsOf(runIds.b).length === 1, { message: "b's hook" });
    await waitFor(async () => (await owed(t.schema)) === 0, { message: 'every owed hook called' });
    expect(callsOf(runIds.b)).toEqual([`onRunCancelled ${runIds.b} cancelled`]);
  });

  it('a workflow without hooks writes no hook row and is not listed as having hooks', async () => {
    const t = await createApp({ workflows: [AllHooks, NoHooks] });
    const { runId } = await t.durable.start(NoHooks);
    await t.durable.waitForRun(runId, { timeout: 10_000 });
    expect(await sql(`select * from ${ident(t.schema)}.flow_hooks where run_id = $1`, [runId])).toEqual([]);
    expect(await sql(`select workflow, hooks from ${ident(t.schema)}.hook_workflows order by workflow`)).toEqual([
      { workflow: 'hk_all', hooks: ['onRunCompleted', 'onRunFailed', 'onRunCancelled'] },
    ]);
  });

  it('a run ended on a node without a worker (cancel) owes its hook at once; a worker node with the workflow calls it', async () => {
    const schema = freshSchema();
    const starter = await createApp({ schema, workflows: [AllHooks], options: { worker: false } });
    const { runId } = await starter.durable.start(AllHooks, { outcome: 'wait' });
    await starter.durable.cancel(runId);
    expect(await sql(`select run_id, hook, reason from ${ident(schema)}.flow_hooks`)).toEqual([{ run_id: runId, hook: 'onRunCancelled', reason: 'cancelled' }]);
    expect(calls).toEqual([]);
    // a worker node that has the workflow calls it
    await createApp({ schema, workflows: [AllHooks] });
    await waitFor(() => callsOf(runId).length === 1, { timeout: 10_000 });
    await waitFor(async () => (await owed(schema)) === 0);
  });

  it('a hook that throws is logged and called again with back-off until it returns', async () => {
    const logger = new RecordingLogger();
    const t = await createApp({ workflows: [FlakyHook], logger });
    const { runId } = await t.durable.start(FlakyHook);
    await waitFor(async () => callsOf(runId).length === 3 && (await owed(t.schema)) === 0, { timeout: 20_000, message: 'the third call returns' });
    const errors = logger.find('error', `onRunCompleted of run ${runId} (hk_flaky) threw`);
    // back-off 1 s, then 2 s, with jitter (each delay drawn between half of it and all of it)
    const delays = errors.map((e) =>
      e.message
        .match(/\(call (\d)\); called again in (\d+) ms/)
        ?.slice(1)
        .map(Number),
    );
    expect(delays.map((d) => d?.[0])).toEqual([1, 2]);
    expect(delays[0]![1]).toBeGreaterThanOrEqual(500);
    expect(delays[0]![1]).toBeLessThanOrEqual(1000);
    expect(delays[1]![1]).toBeGreaterThanOrEqual(1000);
    expect(delays[1]![1]).toBeLessThanOrEqual(2000);
    expect(errors[0].message).toContain('hook down (1)');
  });

  it('the testing kit: runUntilIdle waits for due hooks, and skipTime brings a back-off forward', async () => {
    const env = await DurableTestEnv.create({ providers: [FlakyHook] });
    try {
      const { runId } = await env.durable.start(FlakyHook);
      // on a mismatch, what the schema held when runUntilIdle returned
      const expectCalls = async (n: number) => {
        if (callsOf(runId).length === n) return;
        const state = {
          calls: callsOf(runId),
          run: await sql(`select status, node_id, finished_at from ${ident(env.schema)}.runs where id = $1`, [runId]),
          hooks: await sql(`select hook, due_at, node_id, attempts, now() as now from ${ident(env.schema)}.flow_hooks`),
          hookWorkflows: await sql(`select workflow, hooks from ${ident(env.schema)}.hook_workflows`),
        };
        throw new Error(`expected ${n} call(s) after runUntilIdle; state: ${JSON.stringify(state)}`);
      };
      await env.runUntilIdle({ timeout: '20s' });
      await expectCalls(1);
      await env.skipTime('1s');
      await env.runUntilIdle({ timeout: '20s' });
      await expectCalls(2);
      await env.skipTime('2s');
      await env.runUntilIdle({ timeout: '20s' });
      await expectCalls(3);
      expect(await owed(env.schema)).toBe(0);
    } finally {
      await env.close();
    }
  });

  it('the testing kit: a hook owed by a transaction that committed while runUntilIdle was looking is waited for', async () => {
    const env = await DurableTestEnv.create({ providers: [AllHooks] });
    const client = await db().connect();
    try {
      const { runId } = await env.durable.start(AllHooks, { outcome: 'complete' });
      await env.runUntilIdle({ timeout: '20s' });
      expect(callsOf(runId)).toHaveLength(1);
      // A transaction holds flow_hooks while runUntilIdle's look at the schema begins: the look's
      // statement has started (its now() is taken) and waits for the table; the transaction owes a
      // hook due at its own time, later than that now(), and commits before the look reads.
      const hooks = `${ident(env.schema)}.flow_hooks`;
      await client.query('BEGIN');
      await client.query(`LOCK TABLE ${hooks} IN ACCESS EXCLUSIVE MODE`);
      const idle = env.runUntilIdle({ timeout: '20s' });
      // (pg_stat_activity shows the first 1 kB of a statement: the look is told by its beginning)
      const looking = `SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE $1`;
      await waitFor(
        async () => (await sql(looking, [`%(SELECT count(*) FROM "${env.schema}".runs p WHERE status IN ('running', 'compensating')%`])).length > 0,
        {
          message: "runUntilIdle's look waits for the table",
        },
      );
      await client.query(`INSERT INTO ${hooks} (run_id, hook, reason, due_at) VALUES ($1, 'onRunCompleted', 'completed', clock_timestamp())`, [runId]);
      await client.query('COMMIT');
      await idle;
      expect(callsOf(runId)).toHaveLength(2);
      expect(await owed(env.schema)).toBe(0);
    } finally {
      await client.query('ROLLBACK').catch(() => undefined);
      client.release();
      await env.close();
    }
  });

  it('a node killed (SIGKILL) after the run ended and before its hook ran: another node calls the hook, once', async () => {
    const schema = freshSchema();
    // the starting app creates the schema and runs nothing
    const starter = await createApp({ schema, workflows: [Hooked], options: { worker: false } });
    const child = await spawnNode({ schema, nodeId: 'hook-victim', env: { HOOK_CRASH: '1', DURABLE_WORKFLOWS: 'hooked' } });
    const { runId } = await starter.durable.start(Hooked);
    await child.waitForLine(new RegExp(`^IN_HOOK onRunCompleted ${runId}$`));
    const exit = await child.exited;
    expect(exit.signal).toBe('SIGKILL');
    const run = await starter.durable.getRun(runId);
    expect(run).toMatchObject({ status: 'completed', result: { by: 'hook-victim' } });
    expect(await sql(`select hook, node_id from ${ident(schema)}.flow_hooks where run_id = $1`, [runId])).toEqual([
      { hook: 'onRunCompleted', node_id: 'hook-victim' },
    ]);
    expect(calls).toEqual([]);

    // a survivor node with the workflow: claims the dead node's hook once that node's heartbeat is stale
    await createApp({ schema, workflows: [Hooked] });
    await waitFor(async () => callsOf(runId).length === 1 && (await owed(schema)) === 0, { timeout: 15_000, message: 'the survivor calls the hook' });
    // a later run's hook goes through the queue too, and the first is not called again
    const later = await starter.durable.start(Hooked);
    await waitFor(() => callsOf(later.runId).length === 1, { timeout: 10_000 });
    expect(callsOf(runId)).toEqual([`onRunCompleted ${runId} completed`]);
    expect((await starter.durable.getRun(runId))?.result).toEqual({ by: 'hook-victim' });
  });
});
