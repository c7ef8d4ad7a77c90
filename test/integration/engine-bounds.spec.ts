/**
 * The engine's bounds and costs: durations past what a timer can wait, times taken from the
 * database's clock, big batches of starts, a worker that reads only its own workflows' backlog, a
 * timeout sweep, a count of runs by status and an idle node that read no history.
 */
import { Client } from 'pg';
import { DurableValidationError, RunContext, Step, Workflow } from '../../src';
import { DurableConnection } from '../../src/core/durable.connection';
import { ControlsStore } from '../../src/store/controls.store';
import { nodesStatements } from '../../src/store/nodes.store';
import { RunsStore } from '../../src/store/runs.store';
import { runsStatements } from '../../src/store/runs.sql';
import { runsMaintenanceStatements } from '../../src/store/runs.maintenance.sql';
import { encodeTransitions } from '../../src/store/transition.fields';
import { DurableTestEnv } from '../../src/testing';
import { createApp, databaseUrl, freshSchema, ident, sql, waitFor } from '../support';

@Workflow('bounds_sleeper')
class Sleeper {
  @Step()
  async nap(ctx: RunContext) {
    await ctx.sleep('40d');
  }
}

@Workflow('bounds_backoff')
class Backoff {
  @Step({ retry: { attempts: 2, initialDelay: '30d', maxDelay: '60d', jitter: false } })
  async fail() {
    throw new Error('not yet');
  }
}

/** Waits, or starts a child, for as long as its input says: past the year 9999 when told to. */
@Workflow('bounds_too_far', { retry: { attempts: 1 } })
class TooFar {
  @Step()
  async wait(ctx: RunContext<{ how: 'sleep' | 'event' | 'child'; ms: number }>) {
    const { how, ms } = ctx.input;
    if (how === 'sleep') await ctx.sleep(ms);
    else if (how === 'event') await ctx.waitForEvent('go', { timeout: ms });
    else await ctx.callWorkflow(Plain, {}, { delay: ms });
    return how;
  }
}

@Workflow('bounds_plain')
class Plain {
  @Step()
  async s() {
    return 1;
  }
}

@Workflow('bounds_other')
class Other {
  @Step()
  async s() {
    return 2;
  }
}

@Workflow('bounds_timed', { timeout: '1h' })
class Timed {
  @Step()
  async s() {
    return 3;
  }
}

@Workflow('bounds_debounced', { debounce: { period: '10s', timeout: '2s' } })
class Debounced {
  @Step()
  async s() {
    return 4;
  }
}

/** Seconds between two timestamps of a run, as the database computes them. */
async function secondsBetween(schema: string, runId: string, later: string, earlier: string): Promise<number> {
  const [row] = await sql<{ s: string }>(`SELECT extract(epoch FROM ${later} - ${earlier})::text AS s FROM ${ident(schema)}.runs WHERE id = $1`, [runId]);
  return Number(row.s);
}

/** The plan of a statement of the runs store on `schema`, run (and rolled back) with `params` (SQL literals). */
function plan(schema: string, statement: string, types: string, params: string[]): Promise<string> {
  const S = ident(schema);
  return planOf({ ...runsStatements(S), ...runsMaintenanceStatements(S) }[statement], types, params);
}

/**
 * The plan of `text`, run (and rolled back) with `params` (SQL literals); `generic`: the plan made
 * without the parameters' values, as PostgreSQL may choose for a named prepared statement (the
 * module's hot statements are) after its first five executions.
 */
async function planOf(text: string, types: string, params: string[], generic = false): Promise<string> {
  const client = new Client({ connectionString: databaseUrl() });
  await client.connect();
  try {
    await client.query('BEGIN');
    if (generic) await client.query('SET LOCAL plan_cache_mode = force_generic_plan');
    await client.query(`PREPARE probe (${types}) AS ${text}`);
    const rows = await client.query(`EXPLAIN (ANALYZE, COSTS false, TIMING false) EXECUTE probe (${params.join(', ')})`);
    return rows.rows.map((r) => r['QUERY PLAN']).join('\n');
  } finally {
    await client.query('ROLLBACK').catch(() => undefined);
    await client.end();
  }
}

/** `Rows Removed by Filter` of each scan of the `runs` table in `plan` (not of scans of a CTE). */
function removedFromRuns(plan: string): number[] {
  let node = '';
  const removed: number[] = [];
  for (const line of plan.split('\n')) {
    if (/^\s*(->|\S)/.test(line) && !/^\s*(Filter|Rows Removed|Index Cond|Recheck Cond|Heap Blocks|Sort|InitPlan|SubPlan|One-Time)/.test(line.trim()))
      node = line;
    const m = /Rows Removed by Filter: (\d+)/.exec(line);
    if (m && /Scan (using \S+ )?on runs\b/.test(node)) removed.push(Number(m[1]));
  }
  return removed;
}

describe('engine bounds', () => {
  it('a duration the module times in memory past 2^31-1 ms is refused at startup, naming the option', async () => {
    @Workflow('bounds_long_timeout', { timeout: '25d' })
    class LongTimeout {
      @Step()
      async s() {
        return 1;
      }
    }
    @Workflow('bounds_long_step')
    class LongStep {
      @Step({ timeout: '30d' })
      async s() {
        return 1;
      }
    }
    await expect(createApp({ workflows: [LongTimeout] })).rejects.toThrow(/bounds_long_timeout.*timeout must be at most 2147483647ms/);
    await expect(createApp({ workflows: [LongStep] })).rejects.toThrow(/bounds_long_step.*timeout must be at most 2147483647ms/);
    await expect(createApp({ workflows: [LongStep] })).rejects.toBeInstanceOf(DurableValidationError);
    await expect(createApp({ workflows: [Plain], options: { heartbeatInterval: '30d' } })).rejects.toThrow(/heartbeatInterval.*at most 2147483647ms/);
  });

  it('longer durations kept as times in the database work: a 40-day sleep, a 30-day retry back-off', async () => {
    const env = await DurableTestEnv.create({ providers: [Sleeper, Backoff] });
    try {
      const sleeper = await env.durable.start('bounds_sleeper');
      const backoff = await env.durable.start('bounds_backoff');
      await env.runUntilIdle();
      expect(await env.durable.getRun(sleeper.runId)).toMatchObject({ status: 'waiting' });
      expect(await env.durable.getRun(backoff.runId)).toMatchObject({ status: 'pending', error: expect.objectContaining({ message: 'not yet' }) });
      const day = 86_400;
      expect(await secondsBetween(env.schema, sleeper.runId, 'wake_at', 'now()')).toBeGreaterThan(39.99 * day);
      expect(await secondsBetween(env.schema, backoff.runId, 'run_at', 'now()')).toBeGreaterThan(29.99 * day);
      // and they end when that time has passed (moved by the testing kit): the second attempt runs
      await env.skipTime('30d');
      await env.runUntilIdle();
      expect(await env.durable.getRun(backoff.runId)).toMatchObject({ status: 'failed', attempt: 2 });
      expect(await env.durable.getRun(sleeper.runId)).toMatchObject({ status: 'waiting' });
      await env.skipTime('10d');
      await env.runUntilIdle();
      expect(await env.durable.getRun(sleeper.runId)).toMatchObject({ status: 'completed' });
    } finally {
      await env.close();
    }
  });

  it('a sleep, a wait timeout or a child delay ending after the year 9999 fails the step with DurableValidationError', async () => {
    const t = await createApp({ workflows: [TooFar, Plain] });
    const far = 1e15; // about 31,700 years
    for (const how of ['sleep', 'event', 'child'] as const) {
      const { runId } = await t.durable.start(TooFar, { how, ms: far });
      const run = await t.durable.waitForRun(runId, { timeout: 10_000 });
      expect(run).toMatchObject({
        status: 'failed',
        error: { name: 'DurableValidationError', message: expect.stringMatching(/must end before the year 10000/) },
      });
      // within the bound, the same calls wait
      const near = await t.durable.start(TooFar, { how, ms: 3_650 * 86_400_000 });
      await waitFor(async () => (await t.durable.getRun(near.runId))?.status === 'waiting', { message: `${how} of ten years waits` });
    }
  });

  it("a delay and a debounce limit count from the database's clock; a debounced run is due no later than its limit", async () => {
    const t = await createApp({ workflows: [Plain, Debounced], options: { worker: false } });
    const delayed = await t.durable.start('bounds_plain', {}, { delay: '90s' });
    // created_at and run_at come from the same statement's now()
    expect(await secondsBetween(t.schema, delayed.runId, 'run_at', 'created_at')).toBe(90);
    const debounced = await t.durable.start('bounds_debounced', {}, { key: 'k' });
    expect(await secondsBetween(t.schema, debounced.runId, 'run_at', 'created_at')).toBe(2);
    expect(await secondsBetween(t.schema, debounced.runId, 'debounce_until', 'created_at')).toBe(2);
  });

  it('startMany of 2,500 items is written in batches and answers every item in order', async () => {
    const t = await createApp({ workflows: [Plain], options: { worker: false } });
    const sameAt = [0, 1_200, 2_400]; // one in each statement of 1,000
    const items = Array.from({ length: 2_500 }, (_, i) => ({ input: { i }, key: sameAt.includes(i) ? 'same' : `k${i}` }));
    const results = await t.durable.startMany('bounds_plain', items);
    expect(results).toHaveLength(2_500);
    // the first item of the key creates its run, the later ones (later statements) find it
    const same = sameAt.map((i) => results[i]);
    expect(same.map((r) => ('outcome' in r ? r.outcome : 'error'))).toEqual(['created', 'useExisting', 'useExisting']);
    expect(same.map((r) => ('runId' in r ? r.runId : ''))).toEqual(Array(3).fill((same[0] as { runId: string }).runId));
    const created = results.filter((r) => 'outcome' in r && r.outcome === 'created');
    expect(created).toHaveLength(2_498);
    const [row] = await sql<{ n: number }>(`SELECT count(*)::int AS n FROM ${ident(t.schema)}.runs`);
    expect(row.n).toBe(2_498);
  });

  it('an unkeyed startMany of 3,500 items writes two statements at once and answers every item in order', async () => {
    const t = await createApp({ workflows: [Plain], options: { worker: false } });
    const S = ident(t.schema);
    // inserts wait behind this lock, so the statements out at once can be counted
    const blocker = new Client({ connectionString: databaseUrl() });
    await blocker.connect();
    try {
      await blocker.query(`BEGIN; LOCK TABLE ${S}.runs IN SHARE MODE`);
      const started = t.durable.startMany(
        'bounds_plain',
        Array.from({ length: 3_500 }, (_, i) => ({ input: { i } })),
      );
      const waiting = async () =>
        (
          await sql<{ n: number }>(
            `SELECT count(*)::int AS n FROM pg_stat_activity
             WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE $1`,
            [`%INSERT INTO ${S}.runs%`],
          )
        )[0].n;
      await waitFor(async () => (await waiting()) >= 2, { timeout: 60_000 });
      expect(await waiting()).toBe(2);
      await blocker.query('COMMIT');
      const results = await started;
      expect(results.every((r) => 'outcome' in r && r.outcome === 'created')).toBe(true);
      const inputs = new Map((await sql<{ id: string; i: number }>(`SELECT id, (input->>'i')::int AS i FROM ${S}.runs`)).map((r) => [r.id, r.i]));
      expect(inputs.size).toBe(3_500);
      expect(results.map((r) => inputs.get((r as { runId: string }).runId))).toEqual(Array.from({ length: 3_500 }, (_, i) => i));
    } finally {
      await blocker.query('ROLLBACK').catch(() => undefined);
      await blocker.end();
    }
  });

  it('an unkeyed startMany of 130,000 items (more answers than one function call can take as arguments) answers every item', async () => {
    const t = await createApp({ workflows: [Plain], options: { worker: false } });
    const n = 130_000;
    const results = await t.durable.startMany(
      'bounds_plain',
      Array.from({ length: n }, (_, i) => ({ input: { i } })),
    );
    expect(results).toHaveLength(n);
    const ids = new Set(results.map((r) => ('outcome' in r && r.outcome === 'created' ? r.runId : 'not created')));
    expect(ids.size).toBe(n);
    expect(ids.has('not created')).toBe(false);
    const [row] = await sql<{ n: number }>(`SELECT count(*)::int AS n FROM ${ident(t.schema)}.runs`);
    expect(row.n).toBe(n);
  }, 120_000);

  it("a startMany with keys, or inside a caller's transaction, writes its statements one after another", async () => {
    const t = await createApp({ workflows: [Plain], options: { worker: false } });
    const runs = t.get(RunsStore);
    const write = runs.insertOrAnswer.bind(runs);
    let out = 0;
    const most: number[] = [];
    jest.spyOn(runs, 'insertOrAnswer').mockImplementation(async (...args) => {
      most[most.length - 1] = Math.max(most[most.length - 1], ++out);
      try {
        return await write(...args);
      } finally {
        out--;
      }
    });
    const items = (prefix: string, keyed: boolean) => Array.from({ length: 2_500 }, (_, i) => ({ input: { i }, ...(keyed ? { key: `${prefix}${i}` } : {}) }));
    most.push(0);
    await t.durable.startMany('bounds_plain', items('keyed', true));
    most.push(0);
    await t.get(DurableConnection).dataSource.transaction((manager) => t.durable.startMany('bounds_plain', items('', false), { manager }));
    most.push(0);
    await t.durable.startMany('bounds_plain', items('', false));
    // each call wrote 3 statements: keyed and joined one at a time; unkeyed on its own two at once
    expect(most).toEqual([1, 1, 2]);
    expect(runs.insertOrAnswer).toHaveBeenCalledTimes(9);
    const [row] = await sql<{ n: number }>(`SELECT count(*)::int AS n FROM ${ident(t.schema)}.runs`);
    expect(row.n).toBe(7_500);
  });

  it("a worker claims through its own workflows' index range: another workflow's backlog is never read", async () => {
    const t = await createApp({ workflows: [Plain, Other], options: { worker: false } });
    await t.durable.startMany(
      'bounds_other',
      Array.from({ length: 5_000 }, () => ({})),
    );
    await t.durable.startMany(
      'bounds_plain',
      Array.from({ length: 3 }, () => ({})),
    );
    await sql(`INSERT INTO ${ident(t.schema)}.nodes (id) VALUES ('probe')`);
    await sql(`ANALYZE ${ident(t.schema)}.runs`);
    const text = await plan(t.schema, 'claim', 'text, int, text[], int, bigint', ["'probe'", '100', "ARRAY['bounds_plain']", '60000', '1']);
    expect(text).toMatch(/Index Scan using runs_pending on runs[\s\S]*Index Cond: \(\(workflow = wf(_\d+)?\.workflow\)/);
    // runs of another priority than 0 come from their own partial index, empty here
    expect(text).toMatch(/Index Scan using runs_pending_priority on runs \S* ?\(actual rows=0 loops=1\)/);
    // only the 3 runs of bounds_plain are read from runs_pending, none of the 5,000 others
    expect(text).toMatch(/Index Scan using runs_pending on runs \S* ?\(actual rows=3 loops=1\)/);
    expect(text).not.toMatch(/Seq Scan on runs/);
  });

  it('the timeout sweep reads only runs whose deadline may have passed, through indexes, whatever the history', async () => {
    const t = await createApp({ workflows: [Timed, Plain], options: { worker: false } });
    const S = ident(t.schema);
    // a history of 20,000 finished runs with a timeout, and a few going ones
    await sql(`
      INSERT INTO ${S}.runs (id, workflow, status, timeout_ms, run_at, finished_at)
      SELECT gen_random_uuid(), 'bounds_timed', 'completed', 3600000, now() - interval '2 days', now() - interval '1 day'
      FROM generate_series(1, 20000)`);
    await t.durable.startMany(
      'bounds_timed',
      Array.from({ length: 5 }, () => ({})),
    );
    await sql(`ANALYZE ${S}.runs`);
    const text = await plan(t.schema, 'timeouts', 'text[], int, jsonb, jsonb, text', ["ARRAY['bounds_timed']", '1000', "'{}'", "'{}'", "'%s'"]);
    expect(text).toMatch(/runs_deadline/);
    expect(text).toMatch(/runs_timeout_unclaimed/);
    expect(text).not.toMatch(/Seq Scan on runs/);
  });

  it('the timeout sweep skips a run another transaction holds and fails the others at once', async () => {
    const t = await createApp({ workflows: [Timed, Plain], options: { worker: false } });
    const S = ident(t.schema);
    const [held, free] = await Promise.all([t.durable.start(Timed), t.durable.start(Timed)]);
    // both past their 1h timeout without having begun
    await sql(`UPDATE ${S}.runs SET run_at = now() - interval '2 hours' WHERE id = ANY($1::uuid[])`, [[held.runId, free.runId]]);
    const other = new Client({ connectionString: databaseUrl() });
    await other.connect();
    try {
      await other.query('BEGIN');
      await other.query(`SELECT 1 FROM ${S}.runs WHERE id = $1 FOR UPDATE`, [held.runId]);
      let swept = false;
      const sweep = t.get(RunsStore).failTimedOut(t.get(DurableConnection).db, ['bounds_timed'], 100);
      void sweep.finally(() => (swept = true));
      // the sweep ends while the other transaction still holds its run, never waiting for it
      const lockWaits = async () =>
        (await sql(`SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND strpos(query, $1) > 0`, [`${S}.runs`])).length;
      await waitFor(async () => swept || (await lockWaits()) > 0, { message: 'the sweep ends or waits for a lock' });
      expect(swept).toBe(true);
      expect((await sweep).runs.map((r) => r.id)).toEqual([free.runId]);
      await other.query('COMMIT');
      expect((await t.durable.getRun(held.runId))!.status).toBe('pending');
      expect((await t.durable.getRun(free.runId))!.error).toMatchObject({ code: 'timeout' });
    } finally {
      await other.query('ROLLBACK').catch(() => undefined);
      await other.end();
    }
  });

  it('with statistics taken before its runs were due and plans made without parameters, a claim reads each run once and a heartbeat reads no history', async () => {
    const t = await createApp({ workflows: [Plain], options: { worker: false } });
    const S = ident(t.schema);
    // 1,000 runs due in an hour when the statistics are taken: every run pending, none due
    await sql(`
      INSERT INTO ${S}.runs (id, workflow, status, run_at)
      SELECT gen_random_uuid(), 'bounds_plain', 'pending', now() + interval '1 hour' FROM generate_series(1, 1000)`);
    await sql(`ANALYZE ${S}.runs`);
    await sql(`ALTER TABLE ${S}.runs SET (autovacuum_enabled = false)`); // the statistics stay as they are
    // then they are due, and 20,000 finished runs are added that the statistics do not know of
    await sql(`UPDATE ${S}.runs SET run_at = now() - interval '1 second' WHERE status = 'pending'`);
    await sql(`
      INSERT INTO ${S}.runs (id, workflow, status, run_at, finished_at)
      SELECT gen_random_uuid(), 'bounds_plain', 'completed', now(), now() FROM generate_series(1, 20000)`);
    await sql(`INSERT INTO ${S}.nodes (id) VALUES ('probe')`);
    const claim = await planOf(runsStatements(S).claim, 'text, int, text[], int, bigint', ["'probe'", '1000', "ARRAY['bounds_plain']", '60000', '1'], true);
    expect(claim).toMatch(/Update on runs r \(actual rows=1000 loops=1\)/);
    // the claimed runs are read by their primary key in one pass, not every id again for each run
    const byKey = claim.split('\n').filter((line) => /runs_pkey/.test(line) && /actual/.test(line));
    expect(byKey.length).toBeGreaterThan(0);
    for (const line of byKey) expect(line).toMatch(/loops=1\)/);
    expect(claim).not.toMatch(/Rows Removed by Join Filter/);
    // the waiting and compensating runs are not looked for among the finished ones
    for (const removed of removedFromRuns(claim)) expect(removed).toBeLessThan(100);
    expect(claim).not.toMatch(/Seq Scan on runs/);

    // a heartbeat of a node running 1,000 runs checks each by its primary key, with or without parameters
    await sql(`UPDATE ${S}.runs SET status = 'running', node_id = 'probe', epoch = 1 WHERE status = 'pending'`);
    const running = await sql<{ id: string }>(`SELECT id FROM ${S}.runs WHERE status = 'running'`);
    const beat = nodesStatements(S).beat;
    const ids = `ARRAY[${running.map((r) => `'${r.id}'`).join(',')}]::uuid[]`;
    const epochs = `ARRAY[${running.map(() => '1').join(',')}]::int[]`;
    // and with a progress value for each of them
    const progress = `'${JSON.stringify(running.map((r) => ({ id: r.id, epoch: 1, value: 1 })))}'`;
    // the node's row last beaten by the same process: the beat looks for strays
    const mark = '00000000-0000-4000-8000-000000000001';
    await sql(`INSERT INTO ${S}.nodes (id, info, process) VALUES ('probe', '{}', $1) ON CONFLICT (id) DO UPDATE SET process = EXCLUDED.process`, [mark]);
    for (const generic of [false, true]) {
      for (const reported of ["'[]'", progress]) {
        // with a claim of the node still out (number 2)
        // (no step cut short by a fence)
        const params = ["'probe'", "'{}'", ids, epochs, '60000', '2', reported, '1', `'${mark}'`, 'true', 'ARRAY[]::uuid[]', 'ARRAY[]::int[]'];
        const heartbeat = await planOf(beat, 'text, jsonb, uuid[], int[], int, bigint, jsonb, bigint, uuid, boolean, uuid[], int[]', params, generic);
        expect(heartbeat).not.toMatch(/Seq Scan on runs/);
        expect(heartbeat).toMatch(/runs_pkey[^\n]*\(actual rows=1 loops=1000\)/);
      }
    }
  });

  it("the claim of a limited workflow counts a group's places through one index: runs compensating in other workflows are not read", async () => {
    const t = await createApp({ workflows: [Plain], options: { worker: false } });
    const S = ident(t.schema);
    await sql(
      `INSERT INTO ${S}.runs (id, workflow, status, node_id) SELECT gen_random_uuid(), 'bounds_other', 'compensating', 'n1' FROM generate_series(1, 5000)`,
    );
    await sql(`
      INSERT INTO ${S}.runs (id, workflow, status, node_id, group_key)
      SELECT gen_random_uuid(), 'bounds_limited', 'running', 'n1', 'g' || (i % 100) FROM generate_series(1, 200) i`);
    await sql(`
      INSERT INTO ${S}.runs (id, workflow, status, group_key, run_at)
      SELECT gen_random_uuid(), 'bounds_limited', 'pending', 'g' || (i % 100), now() - interval '1 second' FROM generate_series(1, 1000) i`);
    await sql(`ANALYZE ${S}.runs`);
    await sql(`INSERT INTO ${S}.nodes (id) VALUES ('probe')`);
    const { claim } = (t.get(ControlsStore) as unknown as { sql: Record<string, string> }).sql;
    // at most 5 places per group
    const params = ["'probe'", '1000', "'bounds_limited'", '5', 'true', 'NULL', 'NULL', 'false', '60000', '1'];
    const plan = await planOf(claim, 'text, int, text, int, boolean, int, bigint, boolean, int, bigint', params);
    expect(plan).toMatch(/runs_group_busy/);
    expect(plan).not.toMatch(/runs_compensating/);
    expect(plan).not.toMatch(/Seq Scan on runs/);
    // 100 groups with 2 of 5 places taken: 3 runs claimed in each
    expect(plan).toMatch(/Update on runs r \(actual rows=300 loops=1\)/);
  });

  it('with statistics taken while its runs were pending, a transition reads runs once, not once for each run of its batch', async () => {
    const t = await createApp({ workflows: [Plain], options: { worker: false } });
    const S = ident(t.schema);
    // 5,000 runs analyzed while pending, then running: the statistics say no run is running
    await sql(`INSERT INTO ${S}.runs (id, workflow, status) SELECT gen_random_uuid(), 'bounds_plain', 'pending' FROM generate_series(1, 5000)`);
    await sql(`ANALYZE ${S}.runs`);
    await sql(`ALTER TABLE ${S}.runs SET (autovacuum_enabled = false)`);
    await sql(`UPDATE ${S}.runs SET status = 'running', node_id = 'probe', epoch = 1, attempt = 1`);
    const ids = await sql<{ id: string }>(`SELECT id FROM ${S}.runs LIMIT 1000`);
    const batch = `'${encodeTransitions(ids.map(({ id }) => ({ id, epoch: 1, status: 'completed', step: 1, final: true })))}'`;
    for (const generic of [false, true]) {
      const transition = await planOf(runsStatements(S).transition, 'jsonb, text', [batch, "'probe'"], generic);
      expect(transition).toMatch(/Update on runs r \(actual rows=1000 loops=1\)/);
      // each scan of runs runs once (a plan that starts from runs reads the batch 5,000 times)
      const scans = transition.split('\n').filter((line) => /Scan[^\n]* on runs r /.test(line));
      expect(scans.length).toBeGreaterThan(0);
      for (const line of scans) expect(line).toMatch(/loops=1\)/);
      for (const [, removed] of transition.matchAll(/Rows Removed by Join Filter: (\d+)/g)) expect(Number(removed)).toBeLessThan(100);
    }
  });

  it('countRuns with a status alone reads only runs of that status, one workflow at a time, and stops at its cap', async () => {
    const t = await createApp({ workflows: [Plain, Other], options: { worker: false } });
    const S = ident(t.schema);
    // a history of 20,000 completed runs over two workflows, and 3 failed ones among the oldest
    await sql(`
      INSERT INTO ${S}.runs (id, workflow, status, run_at, finished_at)
      SELECT gen_random_uuid(), CASE WHEN i % 2 = 0 THEN 'bounds_plain' ELSE 'bounds_other' END,
        CASE WHEN i <= 3 THEN 'failed' ELSE 'completed' END, now(), now()
      FROM generate_series(1, 20000) AS i`);
    await sql(`ANALYZE ${S}.runs`);
    expect(await t.durable.countRuns({ status: 'failed' })).toEqual({ count: 3, capped: false });
    expect(await t.durable.countRuns({ status: 'completed' }, { cap: 100 })).toEqual({ count: 100, capped: true });
    expect(await t.durable.countRuns({ status: ['failed', 'completed'] })).toEqual({ count: 10_000, capped: true });
    const types = 'text, text, text[], text, uuid, text, uuid, int';
    const rare = await plan(t.schema, 'count', types, ['NULL', 'NULL', "ARRAY['failed']", 'NULL', 'NULL', 'NULL', 'NULL', '10001']);
    expect(rare).toMatch(/Index Only Scan using runs_workflow_status_other on runs r \(actual rows=3 loops=1\)/);
    expect(rare).not.toMatch(/Seq Scan on runs/);
    const common = await plan(t.schema, 'count', types, ['NULL', 'NULL', "ARRAY['completed']", 'NULL', 'NULL', 'NULL', 'NULL', '101']);
    // a common status is found at once, whichever way the planner reads it: the cap's 101 rows, few others
    expect(common).toMatch(/ on runs r \(actual rows=101 loops=1\)/);
    for (const [, removed] of common.matchAll(/Rows Removed by Filter: (\d+)/g)) expect(Number(removed)).toBeLessThan(100);
  });

  it('an idle worker node reads no history: no sequential scan of runs over several heartbeats and maintenance passes', async () => {
    const schema = freshSchema();
    const setup = await createApp({ schema, workflows: [Plain], options: { worker: false } });
    await sql(`
      INSERT INTO ${ident(schema)}.runs (id, workflow, status, run_at, started_at, finished_at)
      SELECT gen_random_uuid(), 'bounds_plain', 'completed', now() - interval '1 hour', now() - interval '1 hour', now() - interval '1 hour'
      FROM generate_series(1, 20000)`);
    await sql(`ANALYZE ${ident(schema)}.runs`);
    await setup.close();
    const scans = async () => {
      await sql('SELECT pg_stat_force_next_flush()').catch(() => undefined); // PostgreSQL 15+
      const [row] = await sql<{ n: string }>(
        `SELECT coalesce(seq_tup_read, 0)::text AS n FROM pg_stat_user_tables WHERE schemaname = $1 AND relname = 'runs'`,
        [schema],
      );
      return Number(row?.n ?? 0);
    };
    await createApp({ schema, workflows: [Plain], options: { nodeId: 'idle' } });
    await waitFor(async () => (await sql(`SELECT 1 FROM ${ident(schema)}.leases WHERE holder = 'idle'`)).length === 1, {
      message: 'the node leads maintenance',
    });
    const before = await scans();
    // several heartbeats (200 ms) and maintenance passes
    await waitFor(
      async () => {
        const [row] = await sql<{ beats: number }>(`SELECT extract(epoch FROM now() - started_at) AS beats FROM ${ident(schema)}.nodes LIMIT 1`);
        return Number(row?.beats ?? 0) > 2;
      },
      { message: 'two seconds of heartbeats' },
    );
    expect((await scans()) - before).toBe(0);
  });
});
