import { RunContext, Step, Workflow } from '../../src';
import { Scheduler } from '../../src/schedules/scheduler';
import type { FireResult } from '../../src/schedules/schedule-fires';
import { Client } from 'pg';
import { clientQueryable } from '../../src/store/db';
import { createApp, databaseUrl, Gate, ident, sql, waitFor } from '../support';

/** Scheduled through the API. */
@Workflow('sched_locks_plain')
class Plain {
  @Step()
  async run(ctx: RunContext) {
    return { input: ctx.input ?? null };
  }
}

/** A tick far from now that the cron below names: a schedule stored now fires it. */
const CRON = '0 0 1 1 *';
const nextNewYear = () => new Date(Date.UTC(new Date().getUTCFullYear() + 1, 0, 1));

/** The test database, its sessions' transactions REPEATABLE READ unless they say otherwise (a database's `default_transaction_isolation`). */
function repeatableReadUrl(): string {
  const url = new URL(databaseUrl());
  url.searchParams.set('options', '-c default_transaction_isolation=repeatable\\ read');
  return url.toString();
}

/** Waits until a statement is blocked by backend `pid`. */
async function blockedBy(pid: number, message: string): Promise<void> {
  await waitFor(
    async () => (await sql<{ n: number }>(`select count(*)::int as n from pg_stat_activity where $1 = any (pg_blocking_pids(pid))`, [pid]))[0].n >= 1,
    { timeout: 30_000, message },
  );
}

async function runsOf(schema: string) {
  return sql<{ id: string; status: string }>(`select id, status from ${ident(schema)}.runs where workflow = 'sched_locks_plain' order by id`);
}

describe('schedule fires and the locks they hold', () => {
  let stuck = new Gate();
  afterEach(() => stuck.open());

  it('a triggerSchedule whose node stops in the middle of it (schedule row locked) is cut off, and a tick then fires', async () => {
    stuck = new Gate();
    const t = await createApp({ workflows: [Plain], options: { worker: false } });
    await t.durable.schedule('sched_locks_plain', CRON, { name: 'stuck_trigger' });
    const scheduler = t.get(Scheduler);
    // the trigger's node stops after its start, its transaction open (the schedule row locked)
    const reached = new Gate();
    let triggerPid = 0;
    jest.spyOn(scheduler.store, 'recordFire').mockImplementationOnce(async (q) => {
      triggerPid = (await q.query<{ pid: number }>('select pg_backend_pid() as pid'))[0].pid;
      reached.open();
      await stuck.wait();
      throw new Error('the node went on after the test');
    });
    const trigger = t.durable.triggerSchedule('stuck_trigger').then(
      (r) => r,
      (err: unknown) => err,
    );
    await reached.wait();
    const tick = nextNewYear();
    const fired = scheduler.fireTick({ name: 'stuck_trigger', workflow: 'sched_locks_plain', cron: CRON, timezone: 'UTC' }, tick, null);
    await blockedBy(triggerPid, "the tick waits on the trigger's transaction");
    // Postgres ends the trigger's idle transaction (as it does a tick's), and the tick goes on
    let done: FireResult | undefined;
    void fired.then((r) => (done = r));
    const out = await waitFor(() => done, { timeout: 30_000, message: 'the tick goes on once the stopped trigger is cut off' });
    expect(out).toEqual({ fired: true, runId: expect.any(String), outcome: 'created' });
    expect((await runsOf(t.schema)).map((r) => r.id)).toEqual([out.runId]);
    stuck.open();
    expect(await trigger).toBeInstanceOf(Error);
  });

  it('on a database whose transactions are REPEATABLE READ by default, a tick that waited on an update of its schedule (another node storing it) still fires', async () => {
    const t = await createApp({ workflows: [Plain], options: { worker: false, url: repeatableReadUrl() } });
    await t.durable.schedule('sched_locks_plain', CRON, { name: 'rr_tick' });
    const scheduler = t.get(Scheduler);
    // "another node" stores the same schedule again (as every node does with its @Schedules at startup)
    const other = new Client({ connectionString: repeatableReadUrl() });
    await other.connect();
    try {
      const [{ pid }] = (await other.query<{ pid: number }>('select pg_backend_pid() as pid')).rows;
      await other.query('BEGIN');
      const [row] = await scheduler.store.all(clientQueryable(other));
      await scheduler.store.upsert(clientQueryable(other), { ...row, next_fire_at: row.next_fire_at?.toISOString() ?? null });
      const tick = nextNewYear();
      const fired = scheduler.fireTick({ name: 'rr_tick', workflow: 'sched_locks_plain', cron: CRON, timezone: 'UTC' }, tick, null);
      await blockedBy(pid, "the tick waits on the other node's update of the schedule");
      await other.query('COMMIT');
      const out = await fired;
      expect(out).toEqual({ fired: true, runId: expect.any(String), outcome: 'created' });
      expect((await runsOf(t.schema)).map((r) => r.id)).toEqual([out.runId]);
      const [info] = await t.durable.listSchedules();
      expect(info).toMatchObject({ lastTickAt: tick, fires: 1, failures: 0, lastOutcome: 'created' });
    } finally {
      await other.end();
    }
  });
});
