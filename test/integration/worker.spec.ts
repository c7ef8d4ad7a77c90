import { Inject, Injectable } from '@nestjs/common';
import { RunContext, Step, Workflow } from '../../src';
import { Client } from 'pg';
import { Worker } from '../../src/worker/worker';
import { ConcurrencyTracker, createApp, databaseUrl, freshSchema, Gate, RecordingLogger, sql, waitFor, waitForLockWait } from '../support';

// ---- retry with backoff -------------------------------------------------------------------------
const attemptsAt: { runId: string; attempt: number; at: number }[] = [];

@Workflow('worker_flaky')
class Flaky {
  @Step({ retry: { attempts: 3, backoff: 'exponential', initialDelay: '1s', maxDelay: '5s', jitter: false } })
  async flaky(ctx: RunContext<{ succeedOn: number }>) {
    attemptsAt.push({ runId: ctx.runId, attempt: ctx.attempt, at: Date.now() });
    if (ctx.attempt < ctx.input.succeedOn) throw new Error(`attempt ${ctx.attempt} failed`);
    return { attempt: ctx.attempt };
  }
}

// ---- timeouts -----------------------------------------------------------------------------------
const timeoutSeen: { runId: string; attempt: number; aborted: boolean; elapsed: number }[] = [];

function untilAborted(signal: AbortSignal, maxMs: number): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, maxMs);
    signal.addEventListener('abort', () => {
      clearTimeout(t);
      resolve();
    });
  });
}

@Workflow('worker_step_timeout')
class StepTimeout {
  @Step({ timeout: '300ms', retry: { attempts: 2, initialDelay: '50ms', backoff: 'fixed' } })
  async slow(ctx: RunContext) {
    const t0 = Date.now();
    await untilAborted(ctx.signal, 15_000);
    timeoutSeen.push({ runId: ctx.runId, attempt: ctx.attempt, aborted: ctx.signal.aborted, elapsed: Date.now() - t0 });
    return 'should not complete';
  }
}

const runTimeoutSteps: string[] = [];
@Workflow('worker_run_timeout', { timeout: '800ms' })
class RunTimeout {
  @Step()
  async a(ctx: RunContext) {
    runTimeoutSteps.push('a');
    await untilAborted(ctx.signal, 15_000);
    runTimeoutSteps.push(`a-end:${ctx.signal.aborted}`);
  }

  @Step()
  async b() {
    runTimeoutSteps.push('b');
  }
}

// ---- concurrency / multi-node -------------------------------------------------------------------
const NODE = 'NODE_TAG';
const tracker = new ConcurrencyTracker();
const executions: { runId: string; node: string }[] = [];

@Injectable()
@Workflow('worker_busy')
class Busy {
  constructor(@Inject(NODE) private readonly node: string) {}

  @Step()
  async work(ctx: RunContext<{ ms: number; gate?: number }>) {
    tracker.enter();
    executions.push({ runId: ctx.runId, node: this.node });
    try {
      // a gated run holds its slot until `gate` runs execute at once (or a deadline passes)
      if (ctx.input.gate) await waitFor(() => tracker.max >= ctx.input.gate!, { timeout: 20_000 }).catch(() => undefined);
      await new Promise((r) => setTimeout(r, ctx.input.ms)); // the step's own work, not test synchronisation
    } finally {
      tracker.exit();
    }
    return this.node;
  }
}

// ---- long steps / saturated pool -----------------------------------------------------------------
const longRuns: { runId: string; node: string; attempt: number }[] = [];
@Injectable()
@Workflow('worker_long')
class Long {
  constructor(@Inject(NODE) private readonly node: string) {}

  @Step()
  async long(ctx: RunContext<{ ms: number; inDb?: boolean }>) {
    longRuns.push({ runId: ctx.runId, node: this.node, attempt: ctx.attempt });
    if (ctx.input.inDb) {
      // holds one of the pool's connections for the whole step
      await ctx.transaction((m) => m.query('select pg_sleep($1)', [ctx.input.ms / 1000]));
    } else {
      await new Promise((r) => setTimeout(r, ctx.input.ms));
    }
    return this.node;
  }
}

// ---- drain --------------------------------------------------------------------------------------
let drainGate = new Gate();
const drainLog: string[] = [];
@Workflow('worker_drain')
class Drain {
  @Step()
  async slow() {
    drainLog.push('started');
    await drainGate.wait();
    drainLog.push('finished');
    return 'drained';
  }
}

let firstStepGate = new Gate();
@Workflow('worker_two_steps')
class TwoSteps {
  @Step()
  async first() {
    drainLog.push('first');
    await firstStepGate.wait();
  }

  @Step()
  async second() {
    drainLog.push('second');
  }
}

describe('worker', () => {
  beforeEach(() => {
    attemptsAt.length = 0;
    timeoutSeen.length = 0;
    runTimeoutSteps.length = 0;
    executions.length = 0;
    drainLog.length = 0;
    longRuns.length = 0;
    drainGate = new Gate();
    firstStepGate = new Gate();
    Object.assign(tracker, { active: 0, max: 0, total: 0 });
  });
  afterEach(() => {
    drainGate.open();
    firstStepGate.open();
  });

  it('retries a failing step with backoff; the run stays unfinished between attempts', async () => {
    const { durable } = await createApp({ workflows: [Flaky] });
    const { runId } = await durable.start('worker_flaky', { succeedOn: 3 });
    // between attempt 1 and 2 (1 s back-off: room for the poll below, also under load): attempt 1's
    // failure is recorded, and the run is not final
    const between = await waitFor(
      async () => {
        const r = await durable.getRun(runId);
        return attemptsAt.length === 1 && r?.error ? r : undefined;
      },
      { interval: 10, message: "attempt 1's failure recorded before attempt 2 starts" },
    );
    expect(['pending', 'running']).toContain(between.status);
    expect(between.finishedAt).toBeNull();
    expect(JSON.stringify(between.error)).toMatch(/attempt 1 failed/);
    const run = await durable.waitForRun(runId, { timeout: 15_000 });
    expect(run.status).toBe('completed');
    expect(run.result).toEqual({ attempt: 3 });
    expect(attemptsAt.map((a) => a.attempt)).toEqual([1, 2, 3]);
    const gap1 = attemptsAt[1].at - attemptsAt[0].at;
    const gap2 = attemptsAt[2].at - attemptsAt[1].at;
    expect(gap1).toBeGreaterThanOrEqual(950); // initialDelay 1 s (a little slack for clock granularity)
    expect(gap2).toBeGreaterThanOrEqual(1_900); // exponential: 2 s
  });

  it('fails the run after the last attempt, recording the error', async () => {
    const { durable } = await createApp({ workflows: [Flaky] });
    const { runId } = await durable.start('worker_flaky', { succeedOn: 99 });
    const run = await durable.waitForRun(runId, { timeout: 15_000 });
    expect(run.status).toBe('failed');
    expect(attemptsAt.map((a) => a.attempt)).toEqual([1, 2, 3]);
    expect(JSON.stringify(run.error)).toMatch(/attempt 3 failed/);
    expect(run.finishedAt).toBeInstanceOf(Date);
  });

  it("a step timeout aborts the step's signal and fails the attempt", async () => {
    const { durable } = await createApp({ workflows: [StepTimeout] });
    const { runId } = await durable.start('worker_step_timeout');
    const run = await durable.waitForRun(runId, { timeout: 15_000 });
    expect(run.status).toBe('failed');
    await waitFor(() => timeoutSeen.length === 2, { timeout: 5_000 });
    expect(timeoutSeen.map((s) => [s.attempt, s.aborted])).toEqual([
      [1, true],
      [2, true],
    ]);
    for (const s of timeoutSeen) expect(s.elapsed).toBeLessThan(5_000);
    expect(JSON.stringify(run.error)).toMatch(/time/i);
  });

  it('a workflow timeout fails the whole run and no later step runs', async () => {
    const { durable } = await createApp({ workflows: [RunTimeout, Flaky] });
    const t0 = Date.now();
    const { runId } = await durable.start('worker_run_timeout');
    const run = await durable.waitForRun(runId, { timeout: 15_000 });
    expect(run.status).toBe('failed');
    expect(Date.now() - t0).toBeLessThan(8_000);
    await waitFor(() => runTimeoutSteps.includes('a-end:true'), { timeout: 5_000 });
    // the worker keeps working (barrier), and step b of the timed-out run never ran
    const barrier = await durable.start('worker_flaky', { succeedOn: 1 });
    await durable.waitForRun(barrier.runId, { timeout: 10_000 });
    expect(runTimeoutSteps).not.toContain('b');
  });

  it('respects worker.concurrency', async () => {
    const { durable } = await createApp({
      workflows: [Busy],
      providers: [{ provide: NODE, useValue: 'solo' }],
      concurrency: 3,
    });
    const started = await durable.startMany(
      'worker_busy',
      Array.from({ length: 12 }, () => ({ input: { ms: 250 } })),
    );
    await Promise.all(started.map((r) => durable.waitForRun((r as { runId: string }).runId, { timeout: 20_000 })));
    expect(tracker.total).toBe(12);
    expect(tracker.max).toBe(3);
  });

  it('two nodes share the work and no run executes twice', async () => {
    const schema = freshSchema();
    // no claim ahead: a node holds at most its 3 slots, and each run waits until 6 execute at once,
    // which only both nodes together can reach
    const node = (name: string) => ({
      schema,
      workflows: [Busy],
      providers: [{ provide: NODE, useValue: name }],
      concurrency: 3,
      options: { worker: { prefetch: 0 } },
    });
    const a = await createApp(node('a'));
    const b = await createApp(node('b'));
    const started = await a.durable.startMany(
      'worker_busy',
      Array.from({ length: 30 }, () => ({ input: { ms: 20, gate: 6 } })),
    );
    const ids = started.map((r) => (r as { runId: string }).runId);
    const runs = await Promise.all(ids.map((id) => b.durable.waitForRun(id, { timeout: 30_000 })));
    expect(runs.every((r) => r.status === 'completed')).toBe(true);
    expect(executions).toHaveLength(30);
    expect(new Set(executions.map((e) => e.runId)).size).toBe(30);
    const byNode = new Set(executions.map((e) => e.node));
    expect(byNode).toEqual(new Set(['a', 'b']));
    expect(tracker.max).toBe(6);
    // each run's result names the node that executed it
    for (const r of runs) expect(r.result).toBe(executions.find((e) => e.runId === r.id)!.node);
  });

  it('a step that outlives nodeTimeout is not taken over while its node is alive', async () => {
    const schema = freshSchema();
    // nodeTimeout 3 s, not the suite's 1 s, so that a busy machine's event-loop stalls are not
    // mistaken for a dead node; the step outlives it
    const options = { nodeTimeout: '3s' };
    const a = await createApp({ schema, workflows: [Long], providers: [{ provide: NODE, useValue: 'a' }], options });
    const { runId } = await a.durable.start('worker_long', { ms: 4_000 });
    await waitFor(() => longRuns.length === 1);
    await createApp({ schema, workflows: [Long], providers: [{ provide: NODE, useValue: 'b' }], options });
    const run = await a.durable.waitForRun(runId, { timeout: 15_000 });
    expect(run).toMatchObject({ status: 'completed', result: 'a' });
    expect(longRuns).toEqual([{ runId, node: 'a', attempt: 1 }]);
  });

  it('a node whose pool is saturated by its steps still heartbeats: no run is taken over', async () => {
    const schema = freshSchema();
    // the steps hold every pooled connection for 1.5 × nodeTimeout: a heartbeat that needed the pool
    // would stop that long and node b would take the runs over. (nodeTimeout is 3 s, not the suite's
    // 1 s, so that a busy machine's event-loop stalls are not mistaken for that.)
    const timing = { nodeTimeout: '3s' };
    const a = await createApp({
      schema,
      workflows: [Long],
      providers: [{ provide: NODE, useValue: 'a' }],
      concurrency: 16,
      options: timing,
    });
    const b = await createApp({ schema, workflows: [Long], providers: [{ provide: NODE, useValue: 'b' }], options: { ...timing, worker: { workflows: [] } } });
    const ids = (
      await a.durable.startMany(
        'worker_long',
        Array.from({ length: 16 }, () => ({ input: { ms: 4_500, inDb: true } })),
      )
    ).map((r) => (r as { runId: string }).runId);
    const runs = await Promise.all(ids.map((id) => b.durable.waitForRun(id, { timeout: 30_000 })));
    expect(runs.map((r) => r.status)).toEqual(Array(16).fill('completed'));
    // every run executed once, all on node a (b only watches: it runs no workflow, but recovers dead nodes)
    expect(longRuns).toHaveLength(16);
    expect(new Set(longRuns.map((r) => r.runId)).size).toBe(16);
    expect(longRuns.every((r) => r.node === 'a' && r.attempt === 1)).toBe(true);
  }, 60_000);

  it('LISTEN/NOTIFY wakes an idle worker long before its 10s poll', async () => {
    const { durable } = await createApp({
      workflows: [Busy],
      providers: [{ provide: NODE, useValue: 'n' }],
      options: { worker: { pollInterval: '10s' } },
    });
    // the first run may be found by the startup poll; the next ones can only come from notifications
    const warm = await durable.start('worker_busy', { ms: 1 });
    await durable.waitForRun(warm.runId, { timeout: 15_000 });
    for (let i = 0; i < 3; i++) {
      const t0 = Date.now();
      const { runId } = await durable.start('worker_busy', { ms: 1 });
      const run = await durable.waitForRun(runId, { timeout: 9_000 });
      expect(run.status).toBe('completed');
      expect(Date.now() - t0).toBeLessThan(2_000);
    }
  });

  it('the LISTEN connection reconnects after it is killed, and wake-ups are fast again', async () => {
    const nodeId = `listen-${Date.now()}`;
    const { durable } = await createApp({
      workflows: [Busy],
      providers: [{ provide: NODE, useValue: 'n' }],
      options: { nodeId, worker: { pollInterval: '10s' } },
    });
    const listenerPids = async () =>
      (await sql<{ pid: number }>(`select pid from pg_stat_activity where application_name like $1 and pid <> pg_backend_pid()`, [`%${nodeId}%`])).map(
        (r) => r.pid,
      );
    const warm = await durable.start('worker_busy', { ms: 1 });
    await durable.waitForRun(warm.runId, { timeout: 15_000 });
    const before = await waitFor(
      async () => {
        const pids = await listenerPids();
        return pids.length > 0 ? pids : undefined;
      },
      { message: "the node's LISTEN connection (application_name naming the node)" },
    );
    await sql(`select pg_terminate_backend(pid) from unnest($1::int[]) as pid`, [before]);
    await waitFor(
      async () => {
        const pids = await listenerPids();
        return pids.length > 0 && pids.every((p) => !before.includes(p));
      },
      { timeout: 10_000, message: 'a new LISTEN connection' },
    );
    const t0 = Date.now();
    const { runId } = await durable.start('worker_busy', { ms: 1 });
    await durable.waitForRun(runId, { timeout: 9_000 });
    expect(Date.now() - t0).toBeLessThan(2_000);
  });

  it('drains on app.close(): a running step finishes and its run completes; nothing new is claimed', async () => {
    const schema = freshSchema();
    const node = await createApp({ schema, workflows: [Drain], options: { shutdownTimeout: '10s' } });
    const observer = await createApp({ schema, workflows: [Drain], options: { worker: false } });
    const { runId } = await node.durable.start('worker_drain');
    await waitFor(() => drainLog.includes('started'));
    const closing = node.close();
    // a run started once the node drains (and a claim it had in flight is back) is not claimed by it
    const worker = node.get(Worker) as unknown as { stopping: boolean; claiming: boolean };
    await waitFor(() => worker.stopping && !worker.claiming, { message: 'the shutdown began and no claim is out' });
    const late = await observer.durable.start('worker_drain');
    let closed = false;
    void closing.then(() => (closed = true));
    // an absence window (not synchronisation): close() must still be waiting for the held step
    await new Promise((r) => setTimeout(r, 300));
    expect(closed).toBe(false);
    drainGate.open();
    await closing;
    expect(drainLog).toEqual(['started', 'finished']);
    const run = await observer.durable.getRun(runId);
    expect(run).toMatchObject({ status: 'completed', result: 'drained' });
    expect((await observer.durable.getRun(late.runId))!.status).toBe('pending');
    // it leaves no node row behind, nor the maintenance lease it held (the only worker node): another node takes it at its next beat
    expect(await sql(`SELECT id FROM "${schema}".nodes`)).toEqual([]);
    expect(await sql(`SELECT holder FROM "${schema}".leases WHERE name = 'maintenance'`)).toEqual([]);
  });

  it('listens once init resolves, and a wake-up reaches it while its heartbeat statement is blocked', async () => {
    const schema = freshSchema();
    // no poll during the test: only a start's NOTIFY makes this node claim
    // nodeTimeout: the claim counts the node alive while its heartbeat is blocked by the lock below
    const node = await createApp({ schema, workflows: [Flaky], options: { worker: { pollInterval: '1h' }, heartbeatInterval: '50ms', nodeTimeout: '10s' } });
    const observer = await createApp({ schema, workflows: [Flaky], options: { worker: false } });
    const first = await observer.durable.start('worker_flaky', { succeedOn: 1 });
    expect(await observer.durable.waitForRun(first.runId, { timeout: 5_000 })).toMatchObject({ status: 'completed' });
    const locker = new Client({ connectionString: databaseUrl() });
    await locker.connect();
    try {
      await locker.query('BEGIN');
      await locker.query(`LOCK TABLE "${schema}".nodes IN EXCLUSIVE MODE`);
      await waitForLockWait([`"${schema}".nodes`], "the node's heartbeat (or its maintenance pass) waits for the table lock");
      // the notification must not queue behind the blocked heartbeat
      const { runId } = await observer.durable.start('worker_flaky', { succeedOn: 1 });
      expect(await observer.durable.waitForRun(runId, { timeout: 5_000 })).toMatchObject({ status: 'completed' });
    } finally {
      await locker.query('COMMIT');
      await locker.end();
    }
    await node.close();
  });

  /**
   * Starts a run of `workflow` due in 300 ms on a node that only claims when notified, holds the
   * node's claim of it with a table lock, begins the node's close() while the claim waits, then
   * lets the claim go and waits for the close. Resolves with the run's id and a node of the schema
   * without a worker.
   */
  async function closeWithClaimInFlight(workflow: typeof Flaky | typeof Drain, input: object, shutdownTimeout: string | number) {
    const schema = freshSchema();
    // no poll during the test: only the NOTIFY below makes this node claim
    const node = await createApp({ schema, workflows: [workflow], options: { worker: { pollInterval: '1h' }, shutdownTimeout } });
    const observer = await createApp({ schema, workflows: [workflow], options: { worker: false } });
    const { runId } = await observer.durable.start(workflow, input, { delay: '300ms' });
    const due = (await observer.durable.getRun(runId))!.runAt.getTime();
    await waitFor(() => Date.now() > due + 50, { message: 'the run is due' });
    // hold the claim: the table lock blocks it after it started (so it sees the run due)
    const locker = new Client({ connectionString: databaseUrl() });
    await locker.connect();
    try {
      await locker.query('BEGIN');
      await locker.query(`LOCK TABLE "${schema}".runs IN EXCLUSIVE MODE`);
      await sql(`SELECT pg_notify($1, '')`, [`durable_${schema}`]); // a wake-up, sent outside the lock's transaction
      await waitForLockWait([`"${schema}".runs`, 'SKIP LOCKED'], 'the claim waits for the table lock');
      const closing = node.close();
      const worker = node.get(Worker) as unknown as { stopping: boolean };
      await waitFor(() => worker.stopping, { message: 'the shutdown began' });
      await locker.query('COMMIT');
      await closing;
    } finally {
      await locker.end();
    }
    return { runId, observer };
  }

  it('a claim still in flight when close() begins: what it claims runs and is written before the pool closes', async () => {
    const { runId, observer } = await closeWithClaimInFlight(Flaky, { succeedOn: 1 }, '10s');
    // before the fix the shutdown did not wait for the claim: the run was launched after the drain
    // and its writes retried forever against the closed pool, leaving it running
    expect((await observer.durable.getRun(runId))!).toMatchObject({ status: 'completed', result: { attempt: 1 } });
  });

  it('with shutdownTimeout 0, a run its claim in flight launches during the shutdown is released, its attempt not used', async () => {
    const { runId, observer } = await closeWithClaimInFlight(Drain, {}, 0);
    // its step (held) is released with the rest, not left running for a recovery that would count its attempt
    expect((await observer.durable.getRun(runId))!).toMatchObject({ status: 'pending', attempt: 0, nodeId: null });
  });

  /**
   * A one-slot node whose run holds the slot (its step waits for drainGate) and three runs it
   * claimed ahead; its heartbeat does not beat during the test (a beat would give back runs the
   * node no longer holds).
   */
  async function claimedAheadOfOneSlot(logger?: RecordingLogger) {
    const schema = freshSchema();
    // made first: Nest's logger is the last app's
    const observer = await createApp({ schema, workflows: [Drain], options: { worker: false } });
    const node = await createApp({
      schema,
      workflows: [Drain],
      logger,
      options: { worker: { concurrency: 1, prefetch: 10 }, shutdownTimeout: '20s', heartbeatInterval: '20s', nodeTimeout: '60s' },
    });
    const worker = node.get(Worker) as unknown as { slots: { pace: () => number } };
    // as if its steps had been ending fast: it claims up to prefetch runs ahead of its one slot
    jest.spyOn(worker.slots, 'pace').mockReturnValue(1);
    const { runId } = await node.durable.start('worker_drain');
    await waitFor(() => drainLog.includes('started'), { message: 'the first run holds the only slot' });
    const ahead = (await observer.durable.startMany('worker_drain', [{}, {}, {}])).map((r) => (r as { runId: string }).runId);
    const states = async () =>
      Promise.all(
        ahead.map(async (id) => {
          const run = (await observer.durable.getRun(id))!;
          return `${run.status}/${run.attempt}/${run.nodeId ?? '-'}`;
        }),
      );
    const nodeId = (await observer.durable.getRun(runId))!.nodeId;
    await waitFor(async () => (await states()).every((s) => s === `running/1/${nodeId}`), { message: 'the three are claimed ahead' });
    return { schema, node, observer, runId, states };
  }

  it('close(): runs claimed ahead are given back at once, while the running step still has shutdownTimeout to finish', async () => {
    const { node, observer, runId, states } = await claimedAheadOfOneSlot();
    const closing = node.close();
    // given back before the running step ends, their attempt not used: another node may take them now
    await waitFor(async () => (await states()).every((s) => s === 'pending/0/-'), {
      timeout: 5_000,
      message: 'the runs claimed ahead are given back while the step runs',
    });
    expect(drainLog).toEqual(['started']);
    drainGate.open();
    await closing;
    expect((await observer.durable.getRun(runId))!).toMatchObject({ status: 'completed', result: 'drained' });
  });

  it('close(): a release the database refuses is not tried again every moment of the drain, only once more at its end', async () => {
    const logger = new RecordingLogger();
    const { schema, node, states } = await claimedAheadOfOneSlot(logger);
    const S = `"${schema}"`;
    await sql(`CREATE FUNCTION ${S}.refuse_release() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'release refused'; END $$`);
    await sql(
      `CREATE TRIGGER refuse_release BEFORE UPDATE ON ${S}.runs FOR EACH ROW WHEN (OLD.status = 'running' AND NEW.status = 'pending') EXECUTE FUNCTION ${S}.refuse_release()`,
    );
    const refused = () => logger.entries.filter((e) => e.level === 'warn' && String(e.message).includes('could not release')).length;
    const closing = node.close();
    await waitFor(() => refused() >= 1, { message: 'the first release is refused' });
    // an absence window (not synchronisation): the drain goes on without trying again
    await new Promise((r) => setTimeout(r, 500));
    expect(refused()).toBe(1);
    drainGate.open();
    await closing;
    expect(refused()).toBe(2); // the release at the end
    expect(await states()).toEqual(Array(3).fill(expect.stringMatching(/^running\/1\//))); // recovered after nodeTimeout
  });

  it('close(): a run whose step ends during the drain is given back at once, not after the other running steps', async () => {
    const schema = freshSchema();
    // no heartbeat during the test (a beat would give back runs the node no longer holds)
    const node = await createApp({
      schema,
      workflows: [Drain, TwoSteps],
      options: { worker: { concurrency: 2 }, shutdownTimeout: '20s', heartbeatInterval: '20s', nodeTimeout: '60s' },
    });
    const observer = await createApp({ schema, workflows: [Drain, TwoSteps], options: { worker: false } });
    await node.durable.start(Drain);
    const { runId } = await node.durable.start(TwoSteps);
    await waitFor(() => drainLog.includes('started') && drainLog.includes('first'), { message: 'both steps run' });
    const closing = node.close();
    const worker = node.get(Worker) as unknown as { slots: { closedBy?: Error } };
    await waitFor(() => worker.slots.closedBy !== undefined, { message: 'the node gives out no more slots' });
    firstStepGate.open(); // its first step ends: the second finds no slot here
    await waitFor(async () => (await observer.durable.getRun(runId))?.status === 'pending', {
      timeout: 5_000,
      message: 'the run between its steps is given back while the other step runs',
    });
    expect(await observer.durable.getRun(runId)).toMatchObject({ step: 'second', attempt: 0, nodeId: null });
    expect(drainLog).toEqual(['started', 'first']);
    drainGate.open();
    await closing;
  });

  it('a step still running at shutdownTimeout is released back to pending, and another node finishes it', async () => {
    const schema = freshSchema();
    const node = await createApp({ schema, workflows: [Drain], options: { shutdownTimeout: '500ms' } });
    const { runId } = await node.durable.start('worker_drain');
    await waitFor(() => drainLog.includes('started'));
    const t0 = Date.now();
    await node.close();
    expect(Date.now() - t0).toBeLessThan(5_000);
    const observer = await createApp({ schema, workflows: [Drain], options: { worker: false } });
    expect((await observer.durable.getRun(runId))!.status).toBe('pending');
    drainGate.open();
    await createApp({ schema, workflows: [Drain] });
    const run = await observer.durable.waitForRun(runId, { timeout: 10_000 });
    expect(run).toMatchObject({ status: 'completed', result: 'drained' });
  });

  it('worker: false never runs anything; a worker node picks the runs up', async () => {
    const schema = freshSchema();
    const starter = await createApp({
      schema,
      workflows: [Busy],
      providers: [{ provide: NODE, useValue: 'starter' }],
      options: { worker: false },
    });
    const ids = (
      await starter.durable.startMany(
        'worker_busy',
        Array.from({ length: 5 }, () => ({ input: { ms: 1 } })),
      )
    ).map((r) => (r as { runId: string }).runId);
    for (const id of ids) expect((await starter.durable.getRun(id))!.status).toBe('pending');
    await createApp({ schema, workflows: [Busy], providers: [{ provide: NODE, useValue: 'worker' }] });
    const runs = await Promise.all(ids.map((id) => starter.durable.waitForRun(id, { timeout: 15_000 })));
    expect(runs.every((r) => r.status === 'completed')).toBe(true);
    expect(executions.map((e) => e.node)).toEqual(Array(5).fill('worker'));
  });

  it('a run past the last step of its workflow (steps removed by a deploy) fails at its claim with a clear error, once', async () => {
    const schema = freshSchema();
    const starter = await createApp({ schema, workflows: [Drain], options: { worker: false } });
    const { runId } = await starter.durable.start('worker_drain', {});
    // left by an earlier version of the workflow with three steps, between its second and third
    await sql(`UPDATE "${schema}".runs SET step = 2 WHERE id = $1`, [runId]);
    await createApp({ schema, workflows: [Drain] });
    const run = await starter.durable.waitForRun(runId, { timeout: 15_000 });
    expect(run).toMatchObject({
      status: 'failed',
      error: { message: 'workflow "worker_drain" has 1 step(s): steps were removed while this run was past them' },
    });
    expect(drainLog).toEqual([]);
    const [{ epoch }] = await sql<{ epoch: number }>(`SELECT epoch FROM "${schema}".runs WHERE id = $1`, [runId]);
    expect(epoch).toBe(1);
  });
});
