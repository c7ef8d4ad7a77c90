/**
 * The engine when things go wrong around it: a maintenance pass that outlasts nodeTimeout, a claim
 * whose reply never came back, a connection that dies without a word, a shutdown in the middle of
 * a one-attempt step, and a database outage under load across processes.
 */
import { Client } from 'pg';
import { RunContext, Step, Workflow } from '../../src';
import { DurableConnection } from '../../src/core/durable.connection';
import { NodesStore } from '../../src/store/nodes.store';
import type { ClaimSequence } from '../../src/worker/claim-sequence';
import { Worker } from '../../src/worker/worker';
import {
  createApp,
  databaseUrl,
  freshSchema,
  Gate,
  ident,
  PgProxy,
  RecordingLogger,
  spawnNode,
  sql,
  waitFor,
  waitForLockWait,
  type NodeProcess,
} from '../support';

/** The mark of the process the store-level tests beat as. */
const PROCESS = '00000000-0000-4000-8000-000000000001';

let gate = new Gate();
const attempts: { runId: string; attempt: number }[] = [];

@Workflow('live_once')
class Once {
  @Step({ retry: { attempts: 1 } })
  async only(ctx: RunContext<{ hold?: boolean }>) {
    attempts.push({ runId: ctx.runId, attempt: ctx.attempt });
    if (ctx.input?.hold) await Promise.race([gate.wait(), new Promise((r) => ctx.signal.addEventListener('abort', r))]);
    return { attempt: ctx.attempt };
  }
}

@Workflow('live_long')
class Long {
  @Step({ retry: { attempts: 1 } })
  async long(ctx: RunContext<{ ms: number }>) {
    attempts.push({ runId: ctx.runId, attempt: ctx.attempt });
    await new Promise((r) => setTimeout(r, ctx.input.ms));
    return 'done';
  }
}

/** The same workflow as test/fixtures/node.js runs, so that the test process can start it. */
@Workflow('outage_step')
class OutageStep {
  @Step()
  async work() {
    return null;
  }
}

/** Ignores its signal: ends only when the test opens the gate; records when each body began and ended. */
let deafGate = new Gate();
const deafBodies: { from: number; to?: number }[] = [];
@Workflow('live_deaf')
class Deaf {
  @Step({ retry: { attempts: 3 } })
  async only() {
    const body: { from: number; to?: number } = { from: Date.now() };
    deafBodies.push(body);
    await deafGate.wait();
    body.to = Date.now();
  }
}

/** Its first body waits for its signal (the abort of its lost run); the next one returns its attempt. */
@Workflow('live_cut_short')
class CutShort {
  @Step({ retry: { attempts: 2 } })
  async only(ctx: RunContext) {
    attempts.push({ runId: ctx.runId, attempt: ctx.attempt });
    if (attempts.length === 1) await new Promise((r) => ctx.signal.addEventListener('abort', r));
    return { attempt: ctx.attempt };
  }
}

const workflows = [Once, Long];

async function heartbeatAgeMs(schema: string, nodeId: string): Promise<number> {
  const [row] = await sql<{ age: number }>(`SELECT extract(epoch FROM now() - heartbeat_at) * 1000 AS age FROM ${ident(schema)}.nodes WHERE id = $1`, [nodeId]);
  return row ? Number(row.age) : Infinity;
}

/**
 * Fences node `nodeId` of `schema`: another transaction holds its row, so every beat waits for it
 * until its lock timeout; resolves once the node logged its fence, with `whileFenced` run after
 * that and the row let go at the end (whatever `whileFenced` did).
 */
async function whileFenced(schema: string, nodeId: string, logger: RecordingLogger, fenced: () => Promise<void> = async () => undefined): Promise<void> {
  const blocker = new Client({ connectionString: databaseUrl() });
  await blocker.connect();
  try {
    await blocker.query('BEGIN');
    await blocker.query(`SELECT 1 FROM ${ident(schema)}.nodes WHERE id = $1 FOR UPDATE`, [nodeId]);
    await waitFor(() => logger.find('warn', 'could not heartbeat').length > 0, { timeout: 10_000, message: 'the node fences itself' });
    await fenced();
  } finally {
    await blocker.query('ROLLBACK');
    await blocker.end();
  }
}

describe('liveness', () => {
  beforeEach(() => {
    gate = new Gate();
    attempts.length = 0;
  });
  afterEach(() => gate.open());

  it('a release at shutdown costs no attempt: a one-attempt step cut off by a deploy runs again elsewhere and completes', async () => {
    const schema = freshSchema();
    const logger = new RecordingLogger();
    const a = await createApp({ schema, workflows, logger, options: { shutdownTimeout: '200ms' } });
    const { runId } = await a.durable.start('live_once', { hold: true });
    await waitFor(() => attempts.length === 1, { message: 'the step runs on the first node' });
    await a.close(); // the step is still running: released after 200 ms
    // the log says what was given back and that it costs nothing
    expect(logger.find('log', 'gave back').map((e) => e.message)).toEqual([
      'shutdown: runs not finished by shutdownTimeout: gave back 1 run(s) for any node to claim (no attempt counted)',
    ]);
    gate.open();
    const b = await createApp({ schema, workflows });
    const run = await b.durable.waitForRun(runId, { timeout: 10_000 });
    expect(run).toMatchObject({ status: 'completed', result: { attempt: 1 } });
    expect(attempts.map((x) => x.attempt)).toEqual([1, 1]);
  });

  it('a maintenance pass blocked longer than nodeTimeout holds up no heartbeat: nothing is taken over or run twice', async () => {
    const schema = freshSchema();
    // the first node takes the maintenance lease; its pass will block on the flows' table
    // nodeTimeout 3 s here (1 s elsewhere in the suite): a busy machine's late beat is not what is tested
    const leader = await createApp({ schema, workflows, options: { nodeId: 'leader', nodeTimeout: '3s' } });
    await waitFor(async () => (await sql(`SELECT holder FROM ${ident(schema)}.leases`)).length === 1, { message: 'the lease is taken' });
    const [{ holder }] = await sql<{ holder: string }>(`SELECT holder FROM ${ident(schema)}.leases`);
    expect(holder).toBe('leader');
    await createApp({ schema, workflows, options: { nodeId: 'other', nodeTimeout: '3s' } });
    const locker = new Client({ connectionString: databaseUrl() });
    await locker.connect();
    try {
      await locker.query('BEGIN');
      await locker.query(`LOCK TABLE ${ident(schema)}.flow_deps IN ACCESS EXCLUSIVE MODE`);
      await waitForLockWait([`${ident(schema)}.flow_deps`], "the leader's maintenance pass waits for the lock");
      const { runId } = await leader.durable.start('live_long', { ms: 7_000 }); // over twice nodeTimeout
      // while the pass stays blocked (over twice nodeTimeout), every node keeps beating
      let worst = 0;
      await waitFor(
        async () => {
          worst = Math.max(worst, await heartbeatAgeMs(schema, 'leader'), await heartbeatAgeMs(schema, 'other'));
          return (await leader.durable.getRun(runId))?.status === 'completed';
        },
        { timeout: 20_000, interval: 100, message: 'the long run completes' },
      );
      // a beat held up by the pass would be as old as the pass is blocked (7 s and more)
      expect(worst).toBeLessThan(3_000);
      expect(attempts.filter((x) => x.runId === runId)).toHaveLength(1);
    } finally {
      await locker.query('COMMIT');
      await locker.end();
    }
  });

  it('a claim whose reply never came back: its node finds the run it holds without running it and gives it back', async () => {
    const schema = freshSchema();
    const node = await createApp({ schema, workflows, options: { nodeId: 'n1' } });
    const observer = await createApp({ schema, workflows, options: { worker: false } });
    // what a claim leaves when its reply is lost: the run is the node's (stamped with the number of
    // one of this process's claims, answered), the node does not know it
    const { runId } = await observer.durable.start('live_once', {}, { runAt: new Date(Date.now() + 3_600_000) });
    const seq = (node.get(Worker) as unknown as { claims: ClaimSequence }).claims.firstClaim();
    await sql(
      `UPDATE ${ident(schema)}.runs SET status = 'running', node_id = 'n1', epoch = epoch + 1, attempt = 1, run_at = now(), claim_seq = $2 WHERE id = $1`,
      [runId, seq],
    );
    const run = await node.durable.waitForRun(runId, { timeout: 10_000 });
    // given back without the attempt that claim counted, then claimed and run once
    expect(run).toMatchObject({ status: 'completed', result: { attempt: 1 } });
    expect(attempts).toHaveLength(1);
  });

  it('a run an earlier process of the node id stamped with a higher claim number (a clock step back) is still given back', async () => {
    const schema = freshSchema();
    const node = await createApp({ schema, workflows, options: { nodeId: 'n1', heartbeatInterval: '200ms' } });
    const observer = await createApp({ schema, workflows, options: { worker: false } });
    const { runId } = await observer.durable.start('live_once', {}, { runAt: new Date(Date.now() + 3_600_000) });
    // above any number this process gives from its clock
    await sql(
      `UPDATE ${ident(schema)}.runs SET status = 'running', node_id = 'n1', epoch = epoch + 1, attempt = 1, run_at = now(), claim_seq = $2 WHERE id = $1`,
      [runId, 9e15],
    );
    const run = await node.durable.waitForRun(runId, { timeout: 10_000 });
    expect(run).toMatchObject({ status: 'completed', result: { attempt: 1 } });
    expect(attempts).toHaveLength(1);
  });

  it('a heartbeat gives back only the runs whose claim was answered: those stamped by a claim still out stay the node’s; an earlier process’s runs keep their attempt', async () => {
    const schema = freshSchema();
    // no worker: the beat statement itself is under test, for a node id no app uses
    const t = await createApp({ schema, workflows, options: { worker: false } });
    const { db } = t.get(DurableConnection);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await t.durable.start('live_once', {}, { runAt: new Date(Date.now() + 3_600_000) })).runId);
    // claimed by n9: by claims numbered 10 and 20 of this process (its first claim: 10), one before
    // claims were numbered and one by claim 5 (both an earlier process of n9), and one by claim 15 that n9 runs
    const seqs = [10, 20, null, 15, 5];
    const beat = (answeredBelow: number) =>
      t.get(NodesStore).beat(db, {
        nodeId: 'n9',
        info: {},
        running: [{ id: ids[3], epoch: 1 }],
        progress: [],
        leaseMs: 60_000,
        answeredBelow,
        firstClaim: 10,
        process: PROCESS,
        giveBack: true,
      });
    // n9's row is this process's (its first beat found none)
    expect(await beat(1)).toMatchObject({ fresh: true, otherProcess: false, strays: 0 });
    for (const [i, id] of ids.entries()) {
      await sql(`UPDATE ${ident(schema)}.runs SET status = 'running', node_id = 'n9', epoch = 1, attempt = 1, claim_seq = $2 WHERE id = $1`, [id, seqs[i]]);
    }
    const statuses = async () =>
      (await sql<{ status: string }>(`SELECT status FROM ${ident(schema)}.runs WHERE id = ANY($1) ORDER BY array_position($1, id)`, [ids])).map(
        (r) => r.status,
      );
    // claim 20 is still out: its run is kept, like the one n9 runs (maxSeq: the highest number on n9's runs)
    expect(await beat(20)).toMatchObject({ strays: 3, interrupted: 2, lost: [], maxSeq: 20 });
    expect(await statuses()).toEqual(['pending', 'running', 'pending', 'running', 'pending']);
    // its answer came back without the run (a lost reply): the next beat gives it back
    expect(await beat(21)).toMatchObject({ strays: 1, interrupted: 0, lost: [], maxSeq: 20 });
    expect(await statuses()).toEqual(['pending', 'pending', 'pending', 'running', 'pending']);
    expect(await beat(21)).toMatchObject({ strays: 0, maxSeq: 15 });
    const [{ attempts: left }] = await sql<{ attempts: number[] }>(
      `SELECT array_agg(attempt ORDER BY array_position($1, id)) AS attempts FROM ${ident(schema)}.runs WHERE id = ANY($1)`,
      [ids],
    );
    // a run given back loses the attempt its claim counted; one an earlier process ran keeps it (interrupted)
    expect(left).toEqual([0, 0, 1, 1, 1]);
  });

  it('a heartbeat and the recovery of dead nodes never wait for a run row another transaction holds: they skip it, and take it at a later pass', async () => {
    const schema = freshSchema();
    const t = await createApp({ schema, workflows, options: { worker: false } });
    const { db } = t.get(DurableConnection);
    const nodes = t.get(NodesStore);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await t.durable.start('live_once', {}, { runAt: new Date(Date.now() + 3_600_000) })).runId);
    const [reporting, stray, orphan] = ids;
    const beat = () =>
      nodes.beat(db, {
        nodeId: 'n9',
        info: {},
        running: [{ id: reporting, epoch: 1 }],
        progress: [{ id: reporting, epoch: 1, value: { done: 1 } }],
        leaseMs: 60_000,
        answeredBelow: 11,
        firstClaim: 10,
        process: PROCESS,
        giveBack: true,
      });
    await beat(); // n9's row is this process's
    // n9 runs `reporting` and holds `stray` without running it; `orphan` belongs to a node with no row (dead)
    await sql(`UPDATE ${ident(schema)}.runs SET status = 'running', node_id = 'n9', epoch = 1, attempt = 1, claim_seq = 10 WHERE id = ANY($1)`, [
      [reporting, stray],
    ]);
    await sql(`UPDATE ${ident(schema)}.runs SET status = 'running', node_id = 'gone', epoch = 1, attempt = 1 WHERE id = $1`, [orphan]);
    // a caller's transaction holds the three rows (as one that delivered events to them and goes on working)
    const blocker = new Client({ connectionString: databaseUrl() });
    await blocker.connect();
    try {
      await blocker.query('BEGIN');
      await blocker.query(`SELECT 1 FROM ${ident(schema)}.runs WHERE id = ANY($1) FOR UPDATE`, [ids]);
      // neither waits: a wait would last until the blocker ends, which it does only after them
      const during = await beat();
      expect(during).toMatchObject({ strays: 0, progressHeld: [reporting] });
      expect(await nodes.recoverDead(db, 60_000)).toEqual({ nodes: 0, runs: 0 });
      const rows = await sql<{ status: string; progress: unknown }>(
        `SELECT status, progress FROM ${ident(schema)}.runs WHERE id = ANY($1) ORDER BY array_position($1, id)`,
        [ids],
      );
      expect(rows).toEqual([
        { status: 'running', progress: null },
        { status: 'running', progress: null },
        { status: 'running', progress: null },
      ]);
    } finally {
      await blocker.query('ROLLBACK');
      await blocker.end();
    }
    expect(await beat()).toMatchObject({ strays: 1, progressHeld: [] });
    expect(await nodes.recoverDead(db, 60_000)).toEqual({ nodes: 0, runs: 1 });
    const rows = await sql<{ status: string; progress: unknown }>(
      `SELECT status, progress FROM ${ident(schema)}.runs WHERE id = ANY($1) ORDER BY array_position($1, id)`,
      [ids],
    );
    expect(rows).toEqual([
      { status: 'running', progress: { done: 1 } },
      { status: 'pending', progress: null },
      { status: 'pending', progress: null },
    ]);
  });

  it('two processes beating under one node id give back none of the runs they hold, keep the lease with the one that took it, and leave the row to the one that beat last', async () => {
    const schema = freshSchema();
    const t = await createApp({ schema, workflows, options: { worker: false } });
    const { db } = t.get(DurableConnection);
    const nodes = t.get(NodesStore);
    const { runId } = await t.durable.start('live_once', {}, { runAt: new Date(Date.now() + 3_600_000) });
    const [p, q] = [PROCESS, '00000000-0000-4000-8000-000000000002'];
    // neither reports the run: to whichever beats alone it is a stray (claim 5, answered)
    const beat = (process: string) =>
      nodes.beat(db, { nodeId: 'twin', info: {}, running: [], progress: [], leaseMs: 60_000, answeredBelow: 100, firstClaim: 50, process, giveBack: true });
    const status = async () => (await sql<{ status: string }>(`SELECT status FROM ${ident(schema)}.runs WHERE id = $1`, [runId]))[0].status;
    const rowOf = async () => (await sql<{ process: string }>(`SELECT process FROM ${ident(schema)}.nodes WHERE id = 'twin'`))[0]?.process;
    expect(await beat(p)).toMatchObject({ fresh: true, leader: true, otherProcess: false });
    await sql(`UPDATE ${ident(schema)}.runs SET status = 'running', node_id = 'twin', epoch = 1, attempt = 1, claim_seq = 5 WHERE id = $1`, [runId]);
    // each beat finds the other's mark: no give-back, and only p renews the lease it took
    expect(await beat(q)).toMatchObject({ otherProcess: true, strays: 0, leader: false });
    expect(await beat(p)).toMatchObject({ otherProcess: true, strays: 0, leader: true });
    expect(await beat(q)).toMatchObject({ otherProcess: true, strays: 0, leader: false });
    expect(await status()).toBe('running');
    // p stopped: q alone beats twice, the second time the row is its own and the stray goes back
    expect(await beat(q)).toMatchObject({ otherProcess: false, strays: 1, interrupted: 1 });
    expect(await status()).toBe('pending');
    // a shutdown removes the row only for the process that beat last, and the lease only for the process holding it
    const leases = () => sql(`SELECT holder, process FROM ${ident(schema)}.leases`);
    expect(await leases()).toEqual([{ holder: 'twin', process: p }]);
    await nodes.remove(db, 'twin', p);
    expect(await rowOf()).toBe(q);
    expect(await leases()).toEqual([]);
    expect(await beat(q)).toMatchObject({ leader: true });
    await nodes.remove(db, 'twin', p);
    expect(await leases()).toEqual([{ holder: 'twin', process: q }]);
    await nodes.remove(db, 'twin', q);
    expect(await rowOf()).toBeUndefined();
    expect(await leases()).toEqual([]);
  });

  it('two apps started with the same nodeId log it as an error and neither gives back the run the other executes, even when one beats several times between two beats of the other', async () => {
    const schema = freshSchema();
    const logger = new RecordingLogger();
    const a = await createApp({ schema, workflows, logger, options: { nodeId: 'twin', heartbeatInterval: '700ms', nodeTimeout: '3s' } });
    const { runId } = await a.durable.start('live_once', { hold: true });
    await waitFor(() => attempts.length === 1, { message: 'the step runs on the first app' });
    const b = await createApp({ schema, workflows, logger, options: { nodeId: 'twin', heartbeatInterval: '100ms', nodeTimeout: '3s' } });
    // watch the row's mark change hands: each change is a beat of one process right after the other's
    let last: string | undefined;
    let handovers = 0;
    await waitFor(
      async () => {
        const [row] = await sql<{ process: string }>(`SELECT process FROM ${ident(schema)}.nodes WHERE id = 'twin'`);
        if (row && row.process !== last) [last, handovers] = [row.process, handovers + 1];
        // ~9 s: past twice the second app's nodeTimeout, after which a node id of its own would let it give back strays
        return handovers >= 26;
      },
      { timeout: 30_000, interval: 20, message: 'both apps beat in turns' },
    );
    // each app logs it when it first sees the other's mark, then again at most once per nodeTimeout while it lasts
    expect(logger.find('error', 'another process is running with nodeId "twin"').length).toBeGreaterThanOrEqual(3);
    expect(await a.durable.getRun(runId)).toMatchObject({ status: 'running', attempt: 1 });
    gate.open();
    expect(await b.durable.waitForRun(runId, { timeout: 10_000 })).toMatchObject({ status: 'completed', result: { attempt: 1 } });
    expect(attempts).toEqual([{ runId, attempt: 1 }]);
  });

  it('a node fenced because it cannot heartbeat claims nothing until a beat succeeds again, then takes the run', async () => {
    const schema = freshSchema();
    const logger = new RecordingLogger();
    // fenced 3 s after its last beat, recoverable by others after 4 s
    const node = await createApp({ schema, workflows, logger, options: { nodeId: 'fenced-1', nodeTimeout: '4s' } });
    // (Nest's logger is one per process: the last app created sets it)
    const starter = await createApp({ schema, workflows, logger, options: { worker: false } });
    const failedBeats = () => logger.find('warn', 'heartbeat failed').length;
    let runId = '';
    await whileFenced(schema, 'fenced-1', logger, async () => {
      ({ runId } = await starter.durable.start('live_once', {}));
      // two more beats fail meanwhile (each after its lock timeout): the run's wake-up and the polls came and went
      const seen = failedBeats();
      await waitFor(() => failedBeats() >= seen + 2, { timeout: 10_000, message: 'two more beats fail' });
      expect((await starter.durable.getRun(runId))!.status).toBe('pending');
      expect(attempts).toEqual([]);
    });
    expect(await node.durable.waitForRun(runId, { timeout: 10_000 })).toMatchObject({ status: 'completed' });
    expect(attempts).toEqual([{ runId, attempt: 1 }]);
  });

  it('a step cut short by its node fencing itself counts its attempt: the node gives the run back and the next attempt runs', async () => {
    const schema = freshSchema();
    const logger = new RecordingLogger();
    const node = await createApp({ schema, workflows: [CutShort], logger, options: { nodeId: 'cut-1', nodeTimeout: '4s' } });
    const { runId } = await node.durable.start(CutShort, {});
    await waitFor(() => attempts.length === 1, { message: 'the first attempt runs' });
    await whileFenced(schema, 'cut-1', logger);
    expect(await node.durable.waitForRun(runId, { timeout: 20_000 })).toMatchObject({ status: 'completed', result: { attempt: 2 } });
    expect(attempts.map((a) => a.attempt)).toEqual([1, 2]);
  });

  it('a beat whose reply comes back late counts from when it was sent: the node fences itself three quarters of nodeTimeout after that, not after the reply', async () => {
    const schema = freshSchema();
    const logger = new RecordingLogger();
    // a beat waits up to 2 s for a row lock (a third of nodeTimeout); the fence comes 4.5 s after the last beat that went through
    await createApp({ schema, workflows, logger, options: { nodeId: 'late-1', nodeTimeout: '6s' } });
    const lockRow = `SELECT 1 FROM ${ident(schema)}.nodes WHERE id = 'late-1' FOR UPDATE`;
    const [first, second] = [new Client({ connectionString: databaseUrl() }), new Client({ connectionString: databaseUrl() })];
    await Promise.all([first.connect(), second.connect()]);
    try {
      await first.query('BEGIN');
      await first.query(lockRow);
      await waitForLockWait([`${ident(schema)}.nodes`, 'heartbeat_at = now()'], 'a beat waits for the row');
      const sentBy = Date.now();
      // queued behind the beat: takes the row as soon as the beat went through, so every later beat fails
      await second.query('BEGIN');
      const queued = second.query(lockRow);
      await waitForLockWait([`${ident(schema)}.nodes`, "id = 'late-1' FOR UPDATE"], 'the second lock waits behind the beat');
      // the slow reply under test: the beat goes through 1.5 s after it was sent
      await new Promise((r) => setTimeout(r, 1_500));
      await first.query('ROLLBACK');
      await queued;
      await waitFor(() => logger.find('warn', 'could not heartbeat').length > 0, { timeout: 15_000, interval: 20, message: 'the node fences itself' });
      // counted from the reply, the fence would come 1.5 s + 4.5 s after the beat was sent
      expect(Date.now() - sentBy).toBeLessThan(5_500);
    } finally {
      await Promise.all([first, second].map((c) => c.query('ROLLBACK').finally(() => c.end())));
    }
  });

  it('a node fences itself three quarters of nodeTimeout after its last beat, not at the tick of the next beat after that', async () => {
    const schema = freshSchema();
    const logger = new RecordingLogger();
    // beats at 0, 2, 4 s: counted at the ticks it would fence at 4 s, a whole nodeTimeout after its last beat
    await createApp({ schema, workflows, logger, options: { nodeId: 'tick-1', heartbeatInterval: '2s', nodeTimeout: '4s' } });
    const blocker = new Client({ connectionString: databaseUrl() });
    await blocker.connect();
    try {
      await blocker.query('BEGIN');
      // every later beat waits for the row, then fails; its last successful beat is the row's heartbeat_at
      const [row] = (await blocker.query<{ at: Date }>(`SELECT heartbeat_at AS at FROM ${ident(schema)}.nodes WHERE id = 'tick-1' FOR UPDATE`)).rows;
      await waitFor(() => logger.find('warn', 'could not heartbeat').length > 0, { timeout: 10_000, interval: 20, message: 'the node fences itself' });
      expect(Date.now() - row.at.getTime()).toBeLessThan(3_500);
    } finally {
      await blocker.query('ROLLBACK');
      await blocker.end();
    }
  });

  it('a step body that ignores the abort of its lost run holds the run on its node: a new claim of it there begins only after the body ends', async () => {
    deafGate = new Gate();
    deafBodies.length = 0;
    const schema = freshSchema();
    const logger = new RecordingLogger();
    const node = await createApp({ schema, workflows: [Deaf], logger, options: { nodeId: 'deaf-1', nodeTimeout: '4s' } });
    const { runId } = await node.durable.start(Deaf, {});
    await waitFor(() => deafGate.arrived === 1, { message: 'the body runs' });
    // the node fences itself (its row locked: its beats fail): the run is lost, its body goes on
    await whileFenced(schema, 'deaf-1', logger);
    // beats succeed again (and would give the run back once nothing holds it here): several that
    // began half a second after the lock went
    const [{ unlocked }] = await sql<{ unlocked: string }>(`SELECT now()::text AS unlocked`);
    await waitFor(
      async () =>
        (await sql(`SELECT 1 FROM ${ident(schema)}.nodes WHERE id = 'deaf-1' AND heartbeat_at > $1::timestamptz + interval '500 ms'`, [unlocked])).length === 1,
      { timeout: 10_000, message: 'beats succeed again' },
    );
    expect(deafBodies).toHaveLength(1);
    deafGate.open();
    expect((await node.durable.waitForRun(runId, { timeout: 15_000 })).status).toBe('completed');
    // run again once the first body had ended, never beside it
    expect(deafBodies).toHaveLength(2);
    expect(deafBodies[1].from).toBeGreaterThanOrEqual(deafBodies[0].to!);
  });

  it('a batch of transitions cut off by a lock timeout is written in halves: the runs whose rows are free complete while one row stays locked', async () => {
    const schema = freshSchema();
    const node = await createApp({ schema, workflows, concurrency: 16, options: { lockTimeout: '300ms' } });
    const ids = [];
    for (let i = 0; i < 16; i++) ids.push((await node.durable.start('live_once', { hold: true })).runId);
    await waitFor(() => attempts.length === 16, { message: 'every step runs' });
    // another transaction holds one run's row: its transition waits for the lock until lockTimeout
    const blocker = new Client({ connectionString: databaseUrl() });
    await blocker.connect();
    try {
      await blocker.query('BEGIN');
      // the last to finish: its transition goes out in a batch with others (the first go out alone)
      const locked = ids[ids.length - 1];
      await blocker.query(`SELECT 1 FROM ${ident(schema)}.runs WHERE id = $1 FOR UPDATE`, [locked]);
      gate.open();
      const others = ids.filter((id) => id !== locked);
      await waitFor(
        async () => {
          const rows = await sql<{ n: number }>(`SELECT count(*)::int AS n FROM ${ident(schema)}.runs WHERE id = ANY($1) AND status = 'completed'`, [others]);
          return rows[0].n === others.length;
        },
        { timeout: 30_000, message: 'the runs whose rows are free complete' },
      );
      expect((await node.durable.getRun(locked))?.status).toBe('running');
    } finally {
      await blocker.query('ROLLBACK');
      await blocker.end();
    }
    expect(await node.durable.waitForRun(ids[ids.length - 1], { timeout: 30_000 })).toMatchObject({ status: 'completed', result: { attempt: 1 } });
    expect(attempts).toHaveLength(16);
  });

  it('a connection that dies without a word does not stop the node for good: the stuck statement fails and the node goes on', async () => {
    const target = new URL(databaseUrl());
    const proxy = new PgProxy(target.hostname, Number(target.port || 5432));
    await proxy.up();
    try {
      const schema = freshSchema();
      const node = await createApp({ schema, workflows, options: { url: proxy.url(databaseUrl()), statementTimeout: '500ms', nodeTimeout: '10s' } });
      const observer = await createApp({ schema, workflows, options: { worker: false } });
      const first = await observer.durable.start('live_once', {});
      await node.durable.waitForRun(first.runId, { timeout: 10_000 });
      // every connection of the node now leads nowhere, and new ones are never answered
      proxy.silence();
      const { runId } = await observer.durable.start('live_once', {});
      await waitFor(async () => (await observer.durable.getRun(runId))?.status === 'pending', { message: 'the run waits' });
      // long enough for the node's claims to be sent into the void
      await waitFor(() => proxy.silentSockets() > 0, { message: 'the node tries to reach the database' });
      proxy.speak();
      const run = await observer.durable.waitForRun(runId, { timeout: 20_000 });
      expect(run.status).toBe('completed');
    } finally {
      await proxy.down();
    }
  });

  it('a database outage of twice nodeTimeout under load (3 processes): every run completes, none ran on two nodes at once', async () => {
    const target = new URL(databaseUrl());
    const proxy = new PgProxy(target.hostname, Number(target.port || 5432));
    await proxy.up();
    const nodes: NodeProcess[] = [];
    try {
      const schema = freshSchema();
      const starter = await createApp({ schema, workflows: [OutageStep], options: { worker: false } });
      const env = { DATABASE_URL: proxy.url(databaseUrl()), DURABLE_NODE_TIMEOUT: '2s', DURABLE_CONCURRENCY: '4', STEP_MS: '200' };
      for (const id of ['o1', 'o2', 'o3']) nodes.push(await spawnNode({ schema, nodeId: id, env }));
      const ids = (
        await starter.durable.startMany(
          'outage_step',
          Array.from({ length: 120 }, () => ({})),
        )
      ).map((r) => (r as { runId: string }).runId);
      const ended = () => nodes.flatMap((n) => n.linesMatching(/^END .* done$/)).length;
      await waitFor(() => ended() >= 20, { timeout: 20_000, message: 'the nodes are busy' });
      await proxy.down();
      await new Promise((r) => setTimeout(r, 4_000)); // the outage itself: twice nodeTimeout, not a synchronisation
      await proxy.up();
      const runs = await Promise.all(ids.map((id) => starter.durable.waitForRun(id, { timeout: 60_000 })));
      expect(runs.every((r) => r.status === 'completed')).toBe(true);
      // per run, the executions' [begin, end] intervals (across the three processes) never overlap
      const spans = new Map<string, { node: string; begin: number; end?: number }[]>();
      for (const n of nodes) {
        for (const line of n.lines) {
          const [kind, id, at] = line.split(' ');
          if (kind === 'BEGIN') spans.set(id, [...(spans.get(id) ?? []), { node: n.nodeId, begin: Number(at) }]);
          if (kind === 'END') {
            const open = spans.get(id)?.find((s) => s.node === n.nodeId && s.end === undefined);
            if (open) open.end = Number(at);
          }
        }
      }
      const overlaps: string[] = [];
      for (const [id, list] of spans) {
        const sorted = [...list].sort((x, y) => x.begin - y.begin);
        for (let i = 1; i < sorted.length; i++) {
          const prev = sorted[i - 1];
          if (prev.end === undefined || prev.end > sorted[i].begin) overlaps.push(`${id}: ${JSON.stringify(sorted)}`);
        }
      }
      expect(overlaps).toEqual([]);
      expect([...spans.keys()].sort()).toEqual([...ids].sort());
    } finally {
      for (const n of nodes) n.signal('SIGKILL');
      await Promise.all(nodes.map((n) => n.exited));
      await proxy.down();
    }
  }, 120_000);
});
