import { DurableValidationError, KeyTakenError, RunContext, Schedule, ScheduleNotFoundError, Step, Workflow } from '../../src';
import { Client } from 'pg';
import { Scheduler } from '../../src/schedules/scheduler';
import { clientQueryable } from '../../src/store/db';
import { createApp, databaseUrl, freshSchema, Gate, ident, NodeProcess, spawnNode, sql, TestApp, waitFor } from '../support';

// ---- workflows ----------------------------------------------------------------------------------

@Schedule('* * * * * *', { name: 'every_second', input: { from: 'cron' } })
@Workflow('sched_tick')
class Tick {
  @Step()
  async tick(ctx: RunContext<{ from: string }>) {
    return { from: ctx.input?.from ?? null, key: ctx.key };
  }
}

/** Not decorated: scheduled through the API. */
@Workflow('sched_plain')
class Plain {
  @Step()
  async run(ctx: RunContext) {
    return { input: ctx.input ?? null, key: ctx.key };
  }
}

/** Another undecorated workflow, that only some nodes have (a schedule moved to it). */
@Workflow('sched_other')
class Other {
  @Step()
  async run(ctx: RunContext) {
    return { input: ctx.input ?? null };
  }
}

let cleanupGate = new Gate();

/** A slow keyed cleanup: fires while it runs find the key held (default onDuplicate useExisting). */
@Schedule('* * * * * *', { key: 'cleanup' })
@Workflow('sched_cleanup')
class Cleanup {
  @Step()
  async clean(ctx: RunContext) {
    await cleanupGate.wait(ctx.signal);
    return 'cleaned';
  }
}

/** Same, with onDuplicate 'error': a fire while the key is held is skipped, not a failure. */
@Schedule('* * * * * *', { key: 'strict' })
@Workflow('sched_strict', { onDuplicate: 'error' })
class Strict {
  @Step()
  async clean(ctx: RunContext) {
    await cleanupGate.wait(ctx.signal);
    return 'cleaned';
  }
}

@Schedule('not a cron')
@Workflow('sched_bad_cron')
class BadCron {
  @Step()
  async s() {}
}

@Schedule('* * * * *', { timezone: 'Mars/Olympus_Mons' })
@Workflow('sched_bad_tz')
class BadTz {
  @Step()
  async s() {}
}

/** Declares its schedule under its own name, which a schedule() call without a name replaces. */
@Schedule('0 0 * * *', { input: { from: 'decorator' } })
@Workflow('sched_report')
class Report {
  @Step()
  async s() {}
}

// ---- helpers ------------------------------------------------------------------------------------

const schedulerOf = (t: TestApp) => t.get(Scheduler);

async function fires(schema: string, schedule: string) {
  return sql<{ tick_at: Date; node_id: string; run_id: string | null; outcome: string | null }>(
    `select tick_at, node_id, run_id, outcome from ${ident(schema)}.schedule_fires where schedule = $1 order by tick_at`,
    [schedule],
  );
}

async function runsOf(schema: string, workflow: string) {
  return sql<{ id: string; key: string | null; input: unknown; status: string }>(
    `select id, key, input, status from ${ident(schema)}.runs where workflow = $1 order by id`,
    [workflow],
  );
}

async function rejection(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('expected a rejection, but it resolved');
}

/** `n` consecutive seconds starting `lead` seconds from now, as a cron seconds list. */
function nextSeconds(n: number, lead: number): { cron: string; first: number } {
  const now = Math.floor(Date.now() / 1000);
  const secs = Array.from({ length: n }, (_, i) => (now + lead + i) % 60);
  return { cron: `${secs.join(',')} * * * * *`, first: (now + lead) * 1000 };
}

// ---- tests --------------------------------------------------------------------------------------

describe('schedules', () => {
  beforeEach(() => {
    cleanupGate = new Gate();
  });
  afterEach(() => cleanupGate.open());

  it('two nodes tick the same per-second schedule: each tick fires exactly once (10 ticks → 10 runs)', async () => {
    const schema = freshSchema();
    const a = await createApp({ schema, workflows: [Plain], options: { nodeId: 'node-a' } });
    const b = await createApp({ schema, workflows: [Plain], options: { nodeId: 'node-b' } });
    const { cron } = nextSeconds(10, 3);
    await a.durable.schedule('sched_plain', cron, { name: 'ten_ticks', input: { n: 1 } });
    // node b learns the schedule from the database (its sync runs with the heartbeat)
    await waitFor(() => schedulerOf(b).mounted().includes('ten_ticks'), { message: 'node b ticks ten_ticks' });
    await waitFor(
      () => {
        const sa = schedulerOf(a).stats.get('ten_ticks');
        const sb = schedulerOf(b).stats.get('ten_ticks');
        return sa?.ticks === 10 && sb?.ticks === 10;
      },
      { timeout: 30_000, message: 'both nodes ticked 10 times' },
    );
    const sa = schedulerOf(a).stats.get('ten_ticks')!;
    const sb = schedulerOf(b).stats.get('ten_ticks')!;
    expect(sa.fired + sb.fired).toBe(10);
    expect(sa.lost + sb.lost).toBe(10);
    expect(sa.failed + sb.failed).toBe(0);
    const f = await fires(schema, 'ten_ticks');
    expect(f).toHaveLength(10);
    const runs = await runsOf(schema, 'sched_plain');
    expect(runs).toHaveLength(10);
    expect(new Set(f.map((x) => x.run_id))).toEqual(new Set(runs.map((r) => r.id)));
    // ten consecutive seconds, one fire each
    const ticks = f.map((x) => new Date(x.tick_at).getTime());
    for (let i = 1; i < ticks.length; i++) expect(ticks[i] - ticks[i - 1]).toBe(1000);
    expect(runs.every((r) => r.key === null)).toBe(true); // no key on the schedule → unkeyed runs
    expect(runs[0].input).toEqual({ n: 1 });
    const [info] = await a.durable.listSchedules();
    expect(info).toMatchObject({ name: 'ten_ticks', workflow: 'sched_plain', cron, timezone: 'UTC', source: 'api', fires: 10, failures: 0 });
    expect(info.lastTickAt!.getTime()).toBe(ticks[9]);
  });

  it('@Schedule("* * * * * *") on two nodes: every tick one run, both nodes tick', async () => {
    const schema = freshSchema();
    const a = await createApp({ schema, workflows: [Tick], options: { nodeId: 'node-a' } });
    const b = await createApp({ schema, workflows: [Tick], options: { nodeId: 'node-b' } });
    await waitFor(() => (schedulerOf(a).stats.get('every_second')?.ticks ?? 0) >= 10 && (schedulerOf(b).stats.get('every_second')?.ticks ?? 0) >= 10, {
      timeout: 30_000,
      message: 'both nodes ticked 10 times',
    });
    await a.close();
    await b.close();
    const f = await fires(schema, 'every_second');
    const runs = await runsOf(schema, 'sched_tick');
    expect(f.length).toBeGreaterThanOrEqual(10);
    expect(runs).toHaveLength(f.length);
    expect(new Set(f.map((x) => new Date(x.tick_at).getTime())).size).toBe(f.length);
    expect(new Set(f.map((x) => x.run_id)).size).toBe(f.length);
    expect(runs.every((r) => (r.input as { from: string }).from === 'cron')).toBe(true);
    const [row] = await sql(`select source, cron, timezone from ${ident(schema)}.schedules where name = 'every_second'`);
    expect(row).toEqual({ source: 'decorator', cron: '* * * * * *', timezone: 'UTC' });
  });

  it('a node that was paused or down does not fire a tick again when it comes back', async () => {
    const schema = freshSchema();
    const a = await createApp({ schema, workflows: [Plain], options: { nodeId: 'node-a' } });
    await a.durable.schedule('sched_plain', '* * * * * *', { name: 'resume' });
    await waitFor(async () => (await fires(schema, 'resume')).length >= 2, { message: 'two fires' });
    // b boots later: it does not catch up on ticks it missed
    const b = await createApp({ schema, workflows: [Plain], options: { nodeId: 'node-b' } });
    await waitFor(async () => (await fires(schema, 'resume')).length >= 5, { message: 'five fires' });
    const f = await fires(schema, 'resume');
    // a node that wakes late fires the tick it was waiting for — already fired: refused
    const stale = await schedulerOf(b).fireTick(
      { name: 'resume', cron: '* * * * * *', timezone: 'UTC', workflow: 'sched_plain' },
      new Date(f[0].tick_at),
      null,
    );
    expect(stale).toEqual({ fired: false });
    // a tick older than the last one fired, that nobody fired (all nodes down then): refused too
    const never = new Date(new Date(f[0].tick_at).getTime() - 30_000);
    expect(await schedulerOf(b).fireTick({ name: 'resume', cron: '* * * * * *', timezone: 'UTC', workflow: 'sched_plain' }, never, null)).toEqual({
      fired: false,
    });
    // a node whose copy of the cron is out of date fires nothing
    const future = new Date(Date.now() + 3_600_000);
    expect(await schedulerOf(b).fireTick({ name: 'resume', cron: '0 * * * * *', timezone: 'UTC', workflow: 'sched_plain' }, future, null)).toEqual({
      fired: false,
    });
    await a.close();
    await b.close();
    const all = await fires(schema, 'resume');
    const runs = await runsOf(schema, 'sched_plain');
    expect(runs).toHaveLength(all.length);
    expect(new Set(all.map((x) => new Date(x.tick_at).getTime())).size).toBe(all.length);
  });

  it('a schedule removed and added again under its name fires none of the ticks it fired before, nor one from before it was added again', async () => {
    const schema = freshSchema();
    const a = await createApp({ schema, workflows: [Plain], options: { nodeId: 'node-a' } });
    const b = await createApp({ schema, workflows: [Plain], options: { nodeId: 'node-b' } });
    const every = { name: 'again', cron: '* * * * * *', timezone: 'UTC', workflow: 'sched_plain' };
    await a.durable.schedule('sched_plain', every.cron, { name: every.name });
    await waitFor(async () => (await fires(schema, 'again')).length >= 2, { message: 'two fires' });
    // a node fires a tick ahead of the database's clock (its clock runs fast), then the schedule is replaced
    const ahead = new Date(Math.ceil(Date.now() / 1000) * 1000 + 3_600_000);
    expect(await schedulerOf(b).fireTick(every, ahead, null)).toMatchObject({ fired: true });
    const [first] = await fires(schema, 'again');
    expect(await a.durable.unschedule('again')).toBe(true);
    // added again after a tick of its own went by
    const gone = new Date(Math.ceil(Date.now() / 1000) * 1000);
    await waitFor(() => Date.now() > gone.getTime() + 100, { message: 'a tick goes by' });
    await a.durable.schedule('sched_plain', every.cron, { name: every.name });
    // a node that was paused through all that wakes with the tick it was waiting for: fired already
    expect(await schedulerOf(b).fireTick(every, new Date(first.tick_at), null)).toEqual({ fired: false });
    // a tick of the time the schedule was gone, that no node fired: not caught up
    expect(await schedulerOf(b).fireTick(every, gone, null)).toEqual({ fired: false });
    expect(await schedulerOf(b).fireTick(every, ahead, null)).toEqual({ fired: false });
    await a.close();
    await b.close();
    const all = await fires(schema, 'again');
    expect(new Set(all.map((x) => new Date(x.tick_at).getTime())).size).toBe(all.length);
    expect(await runsOf(schema, 'sched_plain')).toHaveLength(all.length);
  });

  it('a schedule moved to another workflow ticks only on the nodes that have that workflow', async () => {
    const schema = freshSchema();
    const a = await createApp({ schema, workflows: [Plain], options: { nodeId: 'node-a' } });
    const b = await createApp({ schema, workflows: [Plain, Other], options: { nodeId: 'node-b' } });
    const c = await createApp({ schema, workflows: [Other], options: { nodeId: 'node-c' } });
    await a.durable.schedule('sched_plain', '* * * * * *', { name: 'moved' });
    await waitFor(() => schedulerOf(b).mounted().includes('moved'), { message: 'node b ticks moved' });
    expect(schedulerOf(c).mounted()).toEqual([]);
    await b.durable.schedule('sched_other', '* * * * * *', { name: 'moved', input: { to: 'other' } });
    // a, without the workflow, stops ticking it; c, with only that workflow, starts
    await waitFor(() => !schedulerOf(a).mounted().includes('moved') && schedulerOf(c).mounted().includes('moved'), {
      message: 'node a unmounts moved, node c mounts it',
    });
    // a node whose copy names the workflow the schedule had fires nothing (and fails nothing)
    const future = new Date(Math.ceil(Date.now() / 1000) * 1000 + 3_600_000);
    const stale = { name: 'moved', cron: '* * * * * *', timezone: 'UTC', workflow: 'sched_plain' };
    expect(await schedulerOf(a).fireTick(stale, future, null)).toEqual({ fired: false });
    const movedAt = Date.now();
    await waitFor(async () => (await fires(schema, 'moved')).some((f) => new Date(f.tick_at).getTime() > movedAt + 1000), { message: 'a fire after the move' });
    const [info] = await c.durable.listSchedules();
    expect(info).toMatchObject({ name: 'moved', workflow: 'sched_other', failures: 0 });
    expect(schedulerOf(a).stats.get('moved')?.failed ?? 0).toBe(0);
    expect((await runsOf(schema, 'sched_other')).every((r) => (r.input as { to: string }).to === 'other')).toBe(true);
  });

  it("a sync that read the schedules before this node's schedule or unschedule call does not undo it", async () => {
    const schema = freshSchema();
    const a = await createApp({ schema, workflows: [Plain], options: { nodeId: 'node-a' } });
    const b = await createApp({ schema, workflows: [Other], options: { nodeId: 'node-b' } });
    const s = schedulerOf(a);
    /** Holds node a's next read of the schedules after it read them; resolves when it has. */
    const holdNextRead = async () => {
      const changes = s.store.changes;
      const read = new Gate();
      const release = new Gate();
      s.store.changes = async (q, since) => {
        s.store.changes = changes;
        const rows = await changes.call(s.store, q, since);
        read.open();
        await release.wait();
        return rows;
      };
      await waitFor(() => read.isOpen, { message: 'node a reads the schedules' });
      return { syncing: s.sync(), release: () => release.open() };
    };
    const stored = async (name: string) => (await sql(`select workflow from ${ident(schema)}.schedules where name = $1`, [name]))[0]?.workflow;
    // unschedule while a sync that read the schedule is under way
    await a.durable.schedule('sched_plain', '0 0 1 1 *', { name: 'raced' });
    let held = await holdNextRead();
    const removed = a.durable.unschedule('raced');
    await waitFor(async () => (await stored('raced')) === undefined, { message: 'the schedule is deleted' });
    held.release();
    expect(await removed).toBe(true);
    await held.syncing;
    expect(s.mounted()).toEqual([]);
    // schedule, on this node, a schedule a sync read as another workflow's (which node a does not have)
    await b.durable.schedule('sched_other', '0 0 1 1 *', { name: 'raced' });
    held = await holdNextRead();
    const scheduled = a.durable.schedule('sched_plain', '0 0 1 1 *', { name: 'raced' });
    await waitFor(async () => (await stored('raced')) === 'sched_plain', { message: 'the schedule is replaced' });
    held.release();
    await scheduled;
    await held.syncing;
    expect(s.mounted()).toEqual(['raced']);
  });

  it('where a clock goes back, a cron of some hours fires once in the repeated hour, whichever instant a node names a tick by, a cron of every hour at both; where it goes forward, a skipped tick fires when the hour ends', async () => {
    const t = await createApp({ workflows: [Plain], options: { worker: false } });
    const s = schedulerOf(t);
    // 2027-10-31 in Paris: 03:00 CEST becomes 02:00 CET, so 02:30 happens at 00:30Z and again at 01:30Z
    // (a node computes the one or the other, by the offset in force when it computes)
    const first = new Date('2027-10-31T00:30:00Z');
    const second = new Date('2027-10-31T01:30:00Z');
    const fixed = { name: 'dst_fixed', cron: '30 2 * * *', timezone: 'Europe/Paris', workflow: 'sched_plain' };
    await t.durable.schedule('sched_plain', fixed.cron, { name: fixed.name, timezone: fixed.timezone });
    expect(await s.fireTick(fixed, first, null)).toMatchObject({ fired: true });
    expect(await s.fireTick(fixed, second, null)).toEqual({ fired: false });
    // a node that names it by the second instant, the first never fired: fired once, as the first
    const late = { ...fixed, name: 'dst_late' };
    await t.durable.schedule('sched_plain', late.cron, { name: late.name, timezone: late.timezone });
    expect(await s.fireTick(late, second, null)).toMatchObject({ fired: true });
    expect(await s.fireTick(late, first, null)).toEqual({ fired: false });
    expect((await fires(t.schema, 'dst_late')).map((f) => new Date(f.tick_at).toISOString())).toEqual([first.toISOString()]);
    // every other hour is some hours too: once
    const stepped = { name: 'dst_stepped', cron: '30 */2 * * *', timezone: 'Europe/Paris', workflow: 'sched_plain' };
    await t.durable.schedule('sched_plain', stepped.cron, { name: stepped.name, timezone: stepped.timezone });
    expect(await s.fireTick(stepped, first, null)).toMatchObject({ fired: true });
    expect(await s.fireTick(stepped, second, null)).toEqual({ fired: false });
    // every hour (however written): the two instants are ticks of their own
    for (const cron of ['*/30 * * * *', '30 0-23 * * *']) {
      const every = { name: `dst_every ${cron}`, cron, timezone: 'Europe/Paris', workflow: 'sched_plain' };
      await t.durable.schedule('sched_plain', every.cron, { name: every.name, timezone: every.timezone });
      expect(await s.fireTick(every, first, null)).toMatchObject({ fired: true });
      expect(await s.fireTick(every, second, null)).toMatchObject({ fired: true });
    }
    // an instant whose local time is not of the cron's hours (the cron library names 01:30Z, 02:30
    // CET, for a 03:30 tick that day) is no tick; 03:30 CET is
    const three = { name: 'dst_three', cron: '30 3 * * *', timezone: 'Europe/Paris', workflow: 'sched_plain' };
    await t.durable.schedule('sched_plain', three.cron, { name: three.name, timezone: three.timezone });
    expect(await s.fireTick(three, second, null)).toEqual({ fired: false });
    expect(await s.fireTick(three, new Date('2027-10-31T02:30:00Z'), null)).toMatchObject({ fired: true });
    // where a clock goes forward, a tick in the skipped hour fires at the first time that exists, as
    // the cron library names it (Paris 2027-03-28: 02:30 → 03:00 CEST; New York 2027-03-14: 02:00 → 03:00 EDT)
    const spring = { name: 'dst_spring', cron: '30 2 * * *', timezone: 'Europe/Paris', workflow: 'sched_plain' };
    await t.durable.schedule('sched_plain', spring.cron, { name: spring.name, timezone: spring.timezone });
    expect(await s.fireTick(spring, new Date('2027-03-28T01:00:00Z'), null)).toMatchObject({ fired: true });
    const nightly = { name: 'dst_nightly', cron: '0 2 * * *', timezone: 'America/New_York', workflow: 'sched_plain' };
    await t.durable.schedule('sched_plain', nightly.cron, { name: nightly.name, timezone: nightly.timezone });
    expect(await s.fireTick(nightly, new Date('2027-03-14T07:00:00Z'), null)).toMatchObject({ fired: true });
    expect(await runsOf(t.schema, 'sched_plain')).toHaveLength(10);
  });

  it('two processes: a node paused (SIGSTOP) through several ticks does not fire them again when it resumes', async () => {
    const schema = freshSchema();
    const a = await spawnNode({ schema, nodeId: 'proc-a', fixture: 'schedule-node.js' });
    const b = await spawnNode({ schema, nodeId: 'proc-b', fixture: 'schedule-node.js' });
    const ticks = (n: NodeProcess) => n.linesMatching(/^TICK /);
    await waitFor(() => ticks(a).length >= 2 && ticks(b).length >= 2, { timeout: 20_000, message: 'both processes tick' });
    // pause b right after one of its ticks is done (so it holds no transaction)
    const seen = ticks(b).length;
    await waitFor(() => ticks(b).length > seen, { message: 'b ticks once more' });
    b.signal('SIGSTOP');
    const aAtPause = ticks(a).length;
    await waitFor(() => ticks(a).length >= aAtPause + 3, { timeout: 20_000, message: 'a ticks 3 times while b is paused' });
    const missed = ticks(a)
      .slice(aAtPause)
      .map((l) => l.split(' ')[1]);
    const bAtResume = ticks(b).length;
    b.signal('SIGCONT');
    await waitFor(() => ticks(b).length >= bAtResume + 3, { timeout: 20_000, message: 'b ticks again after resuming' });
    // b wakes with the tick it was waiting for when it stopped: a fired it already
    const [first] = ticks(b).slice(bAtResume);
    expect(first).toMatch(/ lost$/);
    expect(missed).toContain(first.split(' ')[1]);
    a.signal('SIGKILL');
    b.signal('SIGKILL');
    await Promise.all([a.exited, b.exited]);
    const f = await fires(schema, 'node_tick');
    const runs = await runsOf(schema, 'sched_node_tick');
    expect(runs).toHaveLength(f.length);
    expect(new Set(f.map((x) => x.run_id)).size).toBe(f.length);
    // every tick reported as fired, by either process, was fired once
    const fired = [...ticks(a), ...ticks(b)].filter((l) => / fired /.test(l)).map((l) => l.split(' ')[1]);
    expect(new Set(fired).size).toBe(fired.length);
    // the ticks a fired during b's pause are recorded as a's (a tick b fired just before it
    // stopped shows up in a's lines as lost, and stays b's)
    const firedByA = ticks(a)
      .slice(aAtPause)
      .filter((l) => / fired /.test(l))
      .map((l) => l.split(' ')[1]);
    expect(firedByA.length).toBeGreaterThanOrEqual(2);
    for (const t of firedByA) expect(f.find((x) => new Date(x.tick_at).toISOString() === t)?.node_id).toBe('proc-a');
  });

  it('a node stuck in the middle of a fire (schedule row locked) is cut off, and the other nodes fire the next ticks', async () => {
    const schema = freshSchema();
    const a = await createApp({ schema, workflows: [Plain], options: { nodeId: 'node-a' } });
    await a.durable.schedule('sched_plain', '* * * * * *', { name: 'stuck' });
    await waitFor(async () => (await fires(schema, 'stuck')).length >= 1, { message: 'a first fire' });
    // "node b": opens a fire's transaction, takes a tick (locking the schedule row), then stops
    const client = new Client({ connectionString: databaseUrl() });
    client.on('error', () => undefined);
    await client.connect();
    const q = clientQueryable(client);
    const store = schedulerOf(a).store;
    await client.query('BEGIN');
    await store.fireSession(q);
    const future = new Date(Math.ceil(Date.now() / 1000) * 1000 + 3_600_000);
    expect(await store.claimTick(q, { name: 'stuck', workflow: 'sched_plain', cron: '* * * * * *', timezone: 'UTC' }, future, 'node-b', null)).toMatchObject({
      name: 'stuck',
    });
    const stalledAt = Date.now();
    // node a's ticks wait on the row lock until Postgres ends b's idle transaction (5 s)
    await waitFor(async () => (await fires(schema, 'stuck')).some((f) => new Date(f.tick_at).getTime() > stalledAt + 1000), {
      timeout: 15_000,
      message: 'a fires again after b was cut off',
    });
    await expect(client.query('select 1')).rejects.toThrow();
    await client.end().catch(() => undefined);
    await a.close();
    const all = await fires(schema, 'stuck');
    expect(all.every((f) => f.node_id === 'node-a')).toBe(true);
    expect(all.some((f) => new Date(f.tick_at).getTime() === future.getTime())).toBe(false);
    expect(await runsOf(schema, 'sched_plain')).toHaveLength(all.length);
  });

  it('a keyed schedule: fires while the last run holds the key start nothing and record key_duplicate (useExisting)', async () => {
    const t = await createApp({ workflows: [Cleanup] });
    await waitFor(async () => (await fires(t.schema, 'sched_cleanup')).length >= 3, { message: 'three fires' });
    const runs = await runsOf(t.schema, 'sched_cleanup');
    expect(runs).toHaveLength(1);
    expect(runs[0].key).toBe('cleanup');
    const f = await fires(t.schema, 'sched_cleanup');
    expect(f[0].outcome).toBe('created');
    expect(f.slice(1).every((x) => x.outcome === 'useExisting' && x.run_id === runs[0].id)).toBe(true);
    const dupes = await t.durable.listActivity({ kinds: ['key_duplicate'], workflow: 'sched_cleanup' });
    expect(dupes.length).toBeGreaterThanOrEqual(2);
    expect(dupes[0]).toMatchObject({ kind: 'key_duplicate', runId: runs[0].id });
    // triggerSchedule uses the key too
    expect(await t.durable.triggerSchedule('sched_cleanup')).toEqual({ runId: runs[0].id, outcome: 'useExisting' });
    const [info] = await t.durable.listSchedules();
    expect(info).toMatchObject({ name: 'sched_cleanup', key: 'cleanup', source: 'decorator', failures: 0 });
    // once the run finishes, the next fire starts a new one (reuse afterClose)
    cleanupGate.open();
    await waitFor(async () => (await runsOf(t.schema, 'sched_cleanup')).length >= 2, { message: 'a second run' });
  });

  it("a keyed schedule with onDuplicate 'error': a fire while the key is held is skipped and not a failure", async () => {
    const t = await createApp({ workflows: [Strict] });
    await waitFor(async () => (await fires(t.schema, 'sched_strict')).length >= 3, { message: 'three fires' });
    const runs = await runsOf(t.schema, 'sched_strict');
    expect(runs).toHaveLength(1);
    const f = await fires(t.schema, 'sched_strict');
    expect(f.slice(1).every((x) => x.outcome === 'skipped')).toBe(true);
    const [info] = await t.durable.listSchedules();
    expect(info.failures).toBe(0);
    expect(info.lastOutcome).toBe('skipped');
    expect(schedulerOf(t).stats.get('sched_strict')!.failed).toBe(0);
    const err = await rejection(t.durable.triggerSchedule('sched_strict'));
    expect(err).toBeInstanceOf(KeyTakenError);
    expect((err as KeyTakenError).holderId).toBe(runs[0].id);
  });

  it('a keyed triggerSchedule meeting a tick of the same schedule: neither deadlocks, both start or find the one run', async () => {
    // a worker for no workflow: the triggered run stays going (holding its key) while the tick starts;
    // a worker running it could finish it first, and the tick would then rightly start a second run
    const t = await createApp({ workflows: [Plain], options: { worker: { workflows: [] } } });
    const cron = '0 0 1 1 *';
    await t.durable.schedule('sched_plain', cron, { name: 'keyed_race', key: 'race' });
    const scheduler = schedulerOf(t);
    // the trigger's transaction stops after its start (the key taken) until the tick waits on it
    const held = new Gate();
    const reached = new Gate();
    const record = scheduler.store.recordFire.bind(scheduler.store);
    let triggerPid = 0;
    jest.spyOn(scheduler.store, 'recordFire').mockImplementationOnce(async (...args) => {
      triggerPid = (await args[0].query<{ pid: number }>('select pg_backend_pid() as pid'))[0].pid;
      reached.open();
      await held.wait();
      return record(...args);
    });
    const trigger = t.durable.triggerSchedule('keyed_race').then(
      (r) => r,
      (err: unknown) => err,
    );
    await reached.wait();
    const tick = new Date(Date.UTC(new Date().getUTCFullYear() + 1, 0, 1));
    const fired = scheduler.fireTick({ name: 'keyed_race', workflow: 'sched_plain', cron, timezone: 'UTC' }, tick, null);
    // the tick waits on the trigger's transaction: for the schedule row (taken by the trigger first) or the key
    await waitFor(
      async () => (await sql<{ n: number }>(`select count(*)::int as n from pg_stat_activity where $1 = any (pg_blocking_pids(pid))`, [triggerPid]))[0].n >= 1,
      { message: "the tick waits on the trigger's transaction" },
    );
    held.open();
    const triggered = await trigger;
    expect(triggered).not.toBeInstanceOf(Error);
    const out = await fired;
    expect(out.outcome).not.toBe('failed');
    expect(out.fired).toBe(true);
    const runs = await runsOf(t.schema, 'sched_plain');
    expect(runs).toHaveLength(1);
    expect(triggered).toEqual({ runId: runs[0].id, outcome: 'created' });
    expect(out).toEqual({ fired: true, runId: runs[0].id, outcome: 'useExisting' });
    const [info] = await t.durable.listSchedules();
    expect(info).toMatchObject({ fires: 2, failures: 0, lastTickAt: tick });
  });

  it('schedules are stored: an API schedule survives a restart; unschedule stops it on every node', async () => {
    const schema = freshSchema();
    const a = await createApp({ schema, workflows: [Plain], options: { nodeId: 'node-a' } });
    const info = await a.durable.schedule('sched_plain', '*/2 * * * * *', { name: 'stored', key: 'k', input: { x: 1 }, timezone: 'Europe/Paris' });
    expect(info).toMatchObject({ name: 'stored', workflow: 'sched_plain', key: 'k', input: { x: 1 }, timezone: 'Europe/Paris', source: 'api' });
    expect(info.nextFireAt!.getTime()).toBeGreaterThan(Date.now() - 1000);
    await a.close();
    const b = await createApp({ schema, workflows: [Plain], options: { nodeId: 'node-b' } });
    expect((await b.durable.listSchedules()).map((s) => s.name)).toEqual(['stored']);
    expect(schedulerOf(b).mounted()).toEqual(['stored']);
    await waitFor(async () => (await fires(schema, 'stored')).some((x) => x.node_id === 'node-b'), { message: 'b fires the stored schedule' });
    const runs = await runsOf(schema, 'sched_plain');
    expect(runs[0]).toMatchObject({ key: 'k', input: { x: 1 } });
    // replacing it keeps the name; unschedule on another node removes it everywhere
    const c = await createApp({ schema, workflows: [Plain], options: { nodeId: 'node-c' } });
    expect(await c.durable.unschedule('stored')).toBe(true);
    expect(await c.durable.unschedule('stored')).toBe(false);
    await waitFor(() => schedulerOf(b).mounted().length === 0, { message: 'b stops ticking' });
    expect(await b.durable.listSchedules()).toEqual([]);
    expect(await rejection(b.durable.triggerSchedule('stored'))).toBeInstanceOf(ScheduleNotFoundError);
  });

  it('triggerSchedule fires at once with the schedule’s input and key', async () => {
    const t = await createApp({ workflows: [Plain] });
    await t.durable.schedule('sched_plain', '0 0 1 1 *', { name: 'yearly', input: { y: 1 } });
    const res = await t.durable.triggerSchedule('yearly');
    expect(res.outcome).toBe('created');
    const run = await t.durable.waitForRun(res.runId, { timeout: 10_000 });
    expect(run.result).toEqual({ input: { y: 1 }, key: null });
    const [info] = await t.durable.listSchedules();
    expect(info).toMatchObject({ lastRunId: res.runId, lastOutcome: 'created', fires: 1, lastTickAt: null });
  });

  it('a name Postgres cannot store is refused by schedule(), and unknown to unschedule and triggerSchedule', async () => {
    const t = await createApp({ workflows: [Plain] });
    for (const name of ['a\u0000b', 'a\uD800b', 'a\uDC00']) {
      const err = await rejection(t.durable.schedule(Plain, '* * * * *', { name }));
      expect(err).toBeInstanceOf(DurableValidationError);
      expect((err as Error).message).toMatch(/name holds a NUL character or an unpaired UTF-16 surrogate/);
      expect(await t.durable.unschedule(name)).toBe(false);
      expect(await rejection(t.durable.triggerSchedule(name))).toBeInstanceOf(ScheduleNotFoundError);
    }
    expect(await rejection(t.durable.schedule(Plain, '* * * * *', { name: 'n'.repeat(201) }))).toBeInstanceOf(DurableValidationError);
    expect(await rejection(t.durable.schedule(Plain, '* * * * *', { name: 'é'.repeat(128) }))).toBeInstanceOf(DurableValidationError); // 256 bytes
    expect(await sql(`select name from ${ident(t.schema)}.schedules`)).toEqual([]);
    // null options are no options
    await expect(t.durable.schedule(Plain, '0 0 1 1 *', null as never)).resolves.toMatchObject({ name: 'sched_plain', source: 'api' });
  });

  it('a value where the options go is refused, leaving the @Schedule-declared schedule as it was', async () => {
    const t = await createApp({ workflows: [Report] });
    const before = await t.durable.listSchedules();
    expect(before).toMatchObject([{ name: 'sched_report', cron: '0 0 * * *', source: 'decorator', input: { from: 'decorator' } }]);
    for (const options of ['weekly', 7, ['weekly'], new Date()]) {
      const err = await rejection(t.durable.schedule(Report, '0 0 * * 0', options as never));
      expect(err).toBeInstanceOf(DurableValidationError);
      expect((err as Error).message).toMatch(/^schedule sched_report: options must be an object of options \(name, key, input, timezone\)/);
    }
    expect(await t.durable.listSchedules()).toEqual(before);
    // the same mistake in @Schedule fails the startup
    @Schedule('0 0 * * 0', 'weekly' as never)
    @Workflow('sched_bad_options')
    class BadOptions {
      @Step()
      async s() {}
    }
    const err = await rejection(createApp({ workflows: [BadOptions] }));
    expect(err).toBeInstanceOf(DurableValidationError);
    expect((err as Error).message).toMatch(/options must be an object of options/);
  });

  it('invalid cron or time zone → DurableValidationError on schedule and at startup', async () => {
    const t = await createApp({ workflows: [Plain] });
    for (const [cron, tz] of [
      ['not a cron', undefined],
      ['* * * * * * * *', undefined],
      ['61 * * * *', undefined],
      ['* * * * *', 'Nowhere/Nope'],
      ['', undefined],
    ] as const) {
      const err = await rejection(t.durable.schedule('sched_plain', cron, { timezone: tz }));
      expect(err).toBeInstanceOf(DurableValidationError);
      expect((err as DurableValidationError).errors.length).toBeGreaterThan(0);
    }
    // a value JSON cannot show (a BigInt, a cycle) is named in the message all the same
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    for (const [cron, tz] of [
      [10n, undefined],
      [cycle, undefined],
      ['* * * * *', 10n],
      ['* * * * *', cycle],
    ] as const) {
      const err = await rejection(t.durable.schedule('sched_plain', cron as never, { timezone: tz as never }));
      expect(err).toBeInstanceOf(DurableValidationError);
      expect((err as DurableValidationError).errors.length).toBeGreaterThan(0);
    }
    expect(await rejection(t.durable.schedule('sched_plain', '* * * * *', { key: '' }))).toBeInstanceOf(DurableValidationError);
    expect(await t.durable.listSchedules()).toEqual([]);
    expect(await rejection(createApp({ workflows: [BadCron] }))).toBeInstanceOf(DurableValidationError);
    const tzErr = await rejection(createApp({ workflows: [BadTz] }));
    expect(tzErr).toBeInstanceOf(DurableValidationError);
    expect((tzErr as Error).message).toMatch(/time zone/);
  });

  it('a time zone is stored in its canonical spelling, none (or null) is UTC; a cron without its surrounding spaces', async () => {
    const t = await createApp({ workflows: [Plain] });
    await t.durable.schedule('sched_plain', '0 8 * * *', { name: 'paris', timezone: 'europe/paris' });
    await t.durable.schedule('sched_plain', ' 0 9 * * * ', { name: 'utc', timezone: 'utc' });
    await t.durable.schedule('sched_plain', '0 10 * * *', { name: 'none', timezone: null as never });
    // a link is kept as given, not renamed to the zone it points to
    await t.durable.schedule('sched_plain', '0 11 * * *', { name: 'kolkata', timezone: 'Asia/Kolkata' });
    const stored = (await t.durable.listSchedules()).map(({ name, cron, timezone }) => ({ name, cron, timezone }));
    expect(stored).toEqual([
      { name: 'kolkata', cron: '0 11 * * *', timezone: 'Asia/Kolkata' },
      { name: 'none', cron: '0 10 * * *', timezone: 'UTC' },
      { name: 'paris', cron: '0 8 * * *', timezone: 'Europe/Paris' },
      { name: 'utc', cron: '0 9 * * *', timezone: 'UTC' },
    ]);
  });
});
