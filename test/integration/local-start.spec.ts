import { AsyncLocalStorage } from 'node:async_hooks';
import { Client } from 'pg';
import { RunContext, Step, Workflow } from '../../src';
import { DurableConnection } from '../../src/core/durable.connection';
import { uuidv7 } from '../../src/domain/uuid';
import { RunsStore } from '../../src/store/runs.store';
import { ConcurrencyTracker, createApp, databaseUrl, freshSchema, Gate, sql, waitFor, type TestApp } from '../support';

/**
 * A start due now, on a node whose worker has a free slot, inserts its run already claimed by that
 * node and executes it there: no notification, claim or second transaction between the start's
 * commit and the first step.
 */

let gate = new Gate();
@Workflow('local_gated')
class Gated {
  @Step()
  async hold(ctx: RunContext) {
    await gate.wait(ctx.signal);
  }
}

const ran: number[] = [];
@Workflow('local_busy')
class Busy {
  /** Steps of this node (each app has its own instance) running at once. */
  readonly tracker = new ConcurrencyTracker();

  @Step()
  async work(ctx: RunContext<{ i: number }>) {
    this.tracker.enter();
    // a step that takes a little time, so that slots fill
    await new Promise((resolve) => setTimeout(resolve, 5));
    this.tracker.exit();
    ran.push(ctx.input.i);
  }
}

/** What a step sees of the caller's async context. */
const callerContext = new AsyncLocalStorage<string>();
const seenStores: (string | undefined)[] = [];
@Workflow('local_context')
class ContextProbe {
  @Step()
  async look() {
    seenStores.push(callerContext.getStore());
  }
}

@Workflow('local_limited', { concurrency: 2 })
class Limited {
  @Step()
  async work() {}
}

/** How a run began: its status, lease, and whether it started in the transaction that created it. */
async function beginning(schema: string, runId: string) {
  const [row] = await sql(
    `SELECT status, node_id, epoch, attempt, started_at = created_at AS in_start, deadline_at - started_at AS timeout
     FROM "${schema}".runs WHERE id = $1`,
    [runId],
  );
  return row;
}

const finished = (schema: string, n: number) =>
  waitFor(async () => (await sql(`SELECT count(*)::int AS n FROM "${schema}".runs WHERE status = 'completed'`))[0].n === n, { timeout: 20_000 });

/**
 * On a loaded machine a concurrent phase's backlog may never have emptied, and no start was claimed
 * where it was made: then starts on `node` (a worker's) one at a time, each once the last has
 * finished (an empty backlog and a free slot), until one is. Returns how many runs there are then
 * (`total` before; their inputs `{ i }` go on from it).
 */
async function untilOneClaimedHere(node: TestApp, schema: string, total: number): Promise<number> {
  const claimedHere = async () => (await sql<{ n: number }>(`SELECT count(*)::int AS n FROM "${schema}".runs WHERE started_at = created_at`))[0].n > 0;
  for (const most = total + 50; !(await claimedHere()) && total < most;) {
    const { runId } = await node.durable.start(Busy, { i: total++ });
    await node.durable.waitForRun(runId, { timeout: 10_000 });
  }
  return total;
}

beforeEach(() => {
  gate = new Gate();
  ran.length = 0;
  seenStores.length = 0;
});

it('a run started on a node with a free slot is claimed by that node in the start’s own statement, and runs there', async () => {
  const t = await createApp({ workflows: [Busy], concurrency: 2 });
  const [{ id: nodeId }] = await sql(`SELECT id FROM "${t.schema}".nodes`);
  const { runId } = await t.durable.start(Busy, { i: 1 });
  // when start() returns, the run is already this node's: first lease, first attempt, begun in the
  // transaction that created it (a claim is a later transaction: started_at after created_at)
  expect(await beginning(t.schema, runId)).toMatchObject({ node_id: nodeId, epoch: 1, attempt: 1, in_start: true });
  await finished(t.schema, 1);
  expect(ran).toEqual([1]);
});

it('a run claimed where it was started runs in the worker’s async context, not in the caller’s', async () => {
  const t = await createApp({ workflows: [ContextProbe], concurrency: 2 });
  const { runId } = await callerContext.run('request-1', () => t.durable.start(ContextProbe, {}));
  expect(await beginning(t.schema, runId)).toMatchObject({ in_start: true });
  await finished(t.schema, 1);
  // and so do the runs the worker claims after it (its claim loop was set going from that start)
  const { runId: later } = await callerContext.run('request-2', () => t.durable.start(ContextProbe, {}, { runAt: new Date() }));
  await finished(t.schema, 2);
  expect(await beginning(t.schema, later)).toMatchObject({ in_start: false });
  expect(seenStores).toEqual([undefined, undefined]);
});

it('a start with a due time, or of a workflow with limits, goes through the queue and its claim', async () => {
  const t = await createApp({ workflows: [Busy, Limited], concurrency: 2 });
  const dueNow = await t.durable.start(Busy, { i: 1 }, { runAt: new Date() });
  const limited = await t.durable.start(Limited, {});
  await finished(t.schema, 2);
  expect(await beginning(t.schema, dueNow.runId)).toMatchObject({ epoch: 1, in_start: false });
  expect(await beginning(t.schema, limited.runId)).toMatchObject({ epoch: 1, in_start: false });
});

it('with every slot busy, a start goes to the queue and is claimed once a slot frees', async () => {
  const t = await createApp({ workflows: [Gated, Busy], concurrency: 1 });
  const first = await t.durable.start(Gated, {});
  await waitFor(() => gate.arrived === 1);
  const second = await t.durable.start(Busy, { i: 2 });
  expect(await beginning(t.schema, second.runId)).toMatchObject({ status: 'pending', node_id: null, epoch: 0, in_start: null });
  gate.open();
  await finished(t.schema, 2);
  expect(await beginning(t.schema, first.runId)).toMatchObject({ in_start: true });
  expect(await beginning(t.schema, second.runId)).toMatchObject({ epoch: 1, in_start: false });
});

it('a keyed start whose key is free is claimed here; one whose key is held writes nothing and is answered by the key policy', async () => {
  const t = await createApp({ workflows: [Gated], concurrency: 3 });
  const first = await t.durable.start(Gated, {}, { key: 'k1' });
  expect(first.outcome).toBe('created');
  expect(await beginning(t.schema, first.runId)).toMatchObject({ status: 'running', epoch: 1, in_start: true });
  await waitFor(() => gate.arrived === 1);
  // a slot is still free: the duplicate tries to claim here, finds the key held, and is answered
  expect(await t.durable.start(Gated, {}, { key: 'k1' })).toEqual({ runId: first.runId, outcome: 'useExisting' });
  await expect(t.durable.start(Gated, {}, { key: 'k1', onDuplicate: 'error' })).rejects.toMatchObject({ code: 'key_taken' });
  const [{ n }] = await sql(`SELECT count(*)::int AS n FROM "${t.schema}".runs WHERE key = 'k1'`);
  expect(n).toBe(1);
  gate.open();
  await finished(t.schema, 1);
});

it('a start is claimed where it is inserted only by a node that may claim: fresh heartbeat, workflow not paused, no run of it due before', async () => {
  // no worker: the statement itself is under test, for a node row the test keeps
  const t = await createApp({ workflows: [Busy], options: { worker: false } });
  const { schema } = t;
  const runs = t.get(RunsStore);
  const { db } = t.get(DurableConnection);
  await sql(`INSERT INTO "${schema}".nodes (id) VALUES ('n1')`);
  const listener = new Client({ connectionString: databaseUrl() });
  await listener.connect();
  const notified: string[] = [];
  listener.on('notification', (n) => notified.push(n.channel));
  await listener.query(`LISTEN "${runs.channel}"`);
  const insert = (key: string | null = null) => {
    const run = { id: uuidv7(), workflow: 'local_busy', key, holds_key: key !== null, input: { i: 0 }, run_at: null, timeout_ms: 60_000, priority: 0 };
    return runs.insertClaimed(db, run, { nodeId: 'n1', nodeTimeoutMs: 1_000, seq: 1, notify: true }).then((row) => ({ row, id: run.id }));
  };
  try {
    const claimed = await insert();
    expect(claimed.row).toMatchObject({ id: claimed.id, status: 'running', epoch: 1, attempt: 1, step: 0, input: { i: 0 } });
    expect(await beginning(schema, claimed.id)).toMatchObject({ node_id: 'n1', in_start: true, timeout: { minutes: 1 } });
    // keyed: claimed while its key is free; once held, nothing is written
    const keyed = await insert('k');
    expect(keyed.row).toMatchObject({ id: keyed.id, key: 'k', status: 'running' });
    const again = await insert('k');
    expect(again.row).toBe('held');
    expect(await sql(`SELECT id FROM "${schema}".runs WHERE key = 'k'`)).toEqual([{ id: keyed.id }]);
    await sql(`DELETE FROM "${schema}".runs`);

    const queued = async (why: string) => {
      const before = notified.length;
      const { row, id } = await insert();
      expect({ why, row, run: await beginning(schema, id) }).toEqual({
        why,
        row: 'queued',
        run: { status: 'pending', node_id: null, epoch: 0, attempt: 0, in_start: null, timeout: null },
      });
      // the workers are woken for it instead
      await waitFor(() => notified.length > before, { message: `no wake-up for the start queued because ${why}` });
      return id;
    };
    await t.durable.pause(Busy);
    await queued('the workflow is paused');
    // its wake-up is the first: the runs claimed where they were inserted, before it, sent none
    // (theirs would have been delivered first)
    expect(notified).toHaveLength(1);
    await t.durable.resume(Busy);
    // the run queued while paused is due: the next start waits behind it
    await queued('a run of the workflow is due before it');
    await sql(`DELETE FROM "${schema}".runs WHERE status = 'pending'`);
    await sql(`UPDATE "${schema}".nodes SET heartbeat_at = now() - interval '2 seconds'`);
    await queued('the node’s heartbeat is older than nodeTimeout');
  } finally {
    await listener.end();
  }
});

it('concurrent starts on two nodes never run more steps at once than the nodes have slots, and each run runs once', async () => {
  const schema = freshSchema();
  const a = await createApp({ schema, workflows: [Busy], concurrency: 3 });
  const b = await createApp({ schema, workflows: [Busy], concurrency: 3 });
  const n = 120;
  // four callers per node, each starting its share one after another
  const caller = (node: typeof a, from: number) => async () => {
    for (let i = from; i < n; i += 8) await node.durable.start(Busy, { i });
  };
  await Promise.all([0, 1, 2, 3, 4, 5, 6, 7].map((c) => caller(c % 2 ? b : a, c)()));
  await finished(schema, n);
  const total = await untilOneClaimedHere(a, schema, n);
  for (const node of [a, b]) expect(node.get(Busy).tracker.max).toBeLessThanOrEqual(3);
  expect([...ran].sort((x, y) => x - y)).toEqual(Array.from({ length: total }, (_, i) => i));
  const [{ here, queued }] = await sql(
    `SELECT count(*) FILTER (WHERE started_at = created_at)::int AS here, count(*) FILTER (WHERE started_at > created_at)::int AS queued
     FROM "${schema}".runs`,
  );
  // both ways were taken: runs claimed where they were started, and runs that waited for a claim
  expect(here + queued).toBe(total);
  expect(here).toBeGreaterThan(0);
});

it('while starts keep claiming here, a run this node holds but does not know is still given back by its heartbeat', async () => {
  const t = await createApp({ workflows: [Busy], concurrency: 4 });
  const [{ id: nodeId }] = await sql(`SELECT id FROM "${t.schema}".nodes`);
  // what a start whose reply was lost leaves: the run is this node's, the node does not know it
  const { runId } = await t.durable.start(Busy, { i: -1 }, { runAt: new Date(Date.now() + 3_600_000) });
  await sql(`UPDATE "${t.schema}".runs SET status = 'running', node_id = $2, epoch = epoch + 1, attempt = 1, run_at = now() WHERE id = $1`, [runId, nodeId]);
  let going = true;
  let i = 0;
  // one caller after another, so that a start claiming here is nearly always in flight
  const caller = (async () => {
    while (going) await t.durable.start(Busy, { i: i++ });
  })();
  try {
    // every beat reconciles, whatever is out (the default heartbeat is 5 s)
    await waitFor(async () => (await t.durable.getRun(runId))?.status === 'completed', { timeout: 15_000, message: 'the stray run is given back and runs' });
  } finally {
    going = false;
    await caller;
  }
  expect(ran.filter((x) => x === -1)).toEqual([-1]);
});

it('heartbeats every 20 ms beside claims and starts claiming here: none gives back a run whose claim is still out, and each run runs once', async () => {
  const t = await createApp({ workflows: [Busy], concurrency: 4, options: { heartbeatInterval: '20ms' } });
  const other = await createApp({ schema: t.schema, workflows: [Busy], options: { worker: false } });
  const n = 600;
  // two callers on the worker's node (starts claimed where they are made while a slot is free) and
  // two on a node without a worker (runs the worker claims): claims and inserts overlap the beats
  const caller = (c: number) => async () => {
    for (let i = c; i < n; i += 4) await (c % 2 ? other : t).durable.start(Busy, { i });
  };
  await Promise.all([0, 1, 2, 3].map((c) => caller(c)()));
  await finished(t.schema, n);
  const total = await untilOneClaimedHere(t, t.schema, n); // still beside the beats
  // a run given back while its claim was out would have run again after its next claim
  expect([...ran].sort((x, y) => x - y)).toEqual(Array.from({ length: total }, (_, i) => i));
  const [{ here, queued }] = await sql(
    `SELECT count(*) FILTER (WHERE started_at = created_at)::int AS here, count(*) FILTER (WHERE started_at > created_at)::int AS queued
     FROM "${t.schema}".runs`,
  );
  // both kinds of claim were out beside the beats
  expect(here).toBeGreaterThan(0);
  expect(queued).toBeGreaterThan(0);
});
