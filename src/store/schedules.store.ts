import type { Queryable } from './db';

/** A `schedules` row. */
export interface ScheduleRow {
  name: string;
  workflow: string;
  cron: string;
  timezone: string;
  key: string | null;
  input: unknown;
  source: 'decorator' | 'api';
  next_fire_at: Date | null;
  last_tick_at: Date | null;
  last_fire_at: Date | null;
  last_run_id: string | null;
  last_outcome: string | null;
  last_error: unknown;
  fires: number;
  failures: number;
  created_at: Date;
  updated_at: Date;
}

/** A schedule to store (`next_fire_at` as an ISO time). */
export type NewSchedule = Pick<ScheduleRow, 'name' | 'workflow' | 'cron' | 'timezone' | 'key' | 'input' | 'source'> & {
  next_fire_at: string | null;
};

/** What of a stored schedule a node ticks on: a node whose copy differs from the row fires nothing. */
export type ScheduleCopy = Pick<ScheduleRow, 'name' | 'workflow' | 'cron' | 'timezone'>;

/**
 * A read's snapshot (`txid_current_snapshot()`): the transactions it did not see are those of an id
 * at least `xmax` and those in `xip`, in progress when it was taken.
 */
export interface ScheduleMark {
  xmax: string;
  xip: string[];
}

/** A mark before every change: a read since it reads every schedule (and every removal kept). */
export const EVERY_CHANGE: ScheduleMark = { xmax: '0', xip: [] };

/**
 * The schedules changed since a node's last read of them (`SchedulesStore.changes`), as of one
 * snapshot: the current copy of every schedule stored or changed since, and the names removed since.
 */
export interface ScheduleChanges {
  /** The read's snapshot: every change it did not see was made by a transaction it names (the next read's `since`). */
  mark: ScheduleMark;
  /** The database's time of the read, in ms. */
  at: number;
  /** The server read (its start time): another one (failover, restore, recovery) counts its transaction ids from elsewhere. */
  server: string;
  /** Schedules stored, or changed in what a node ticks them on, since `since` (as they are now). */
  rows: ScheduleCopy[];
  /** Names of the schedules removed since `since` and not stored now; null: the table was truncated. */
  removed: (string | null)[];
}

/** What a won tick needs to start its run. */
export type ClaimedTick = Pick<ScheduleRow, 'name' | 'workflow' | 'key' | 'input'>;

/** Statements on `schedules` and `schedule_fires`; `S` is the validated, quoted schema. */
export class SchedulesStore {
  private readonly sql: Record<string, string>;

  constructor(schema: string) {
    const S = `"${schema}"`;
    this.sql = {
      upsert: `
        INSERT INTO ${S}.schedules AS t (name, workflow, cron, timezone, key, input, source, next_fire_at)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
        ON CONFLICT (name) DO UPDATE SET
          workflow = EXCLUDED.workflow, cron = EXCLUDED.cron, timezone = EXCLUDED.timezone, key = EXCLUDED.key,
          input = EXCLUDED.input, source = EXCLUDED.source, next_fire_at = EXCLUDED.next_fire_at,
          updated_at = CASE
            WHEN (t.workflow, t.cron, t.timezone, t.key, t.input, t.source)
              IS NOT DISTINCT FROM (EXCLUDED.workflow, EXCLUDED.cron, EXCLUDED.timezone, EXCLUDED.key, EXCLUDED.input, EXCLUDED.source)
            THEN t.updated_at ELSE now() END
        RETURNING *`,
      dropStaleDecorated: `
        DELETE FROM ${S}.schedules
        WHERE source = 'decorator' AND workflow = ANY($1::text[]) AND NOT (name = ANY($2::text[]))
        RETURNING name`,
      remove: `DELETE FROM ${S}.schedules WHERE name = $1 RETURNING name`,
      // a trigger locks the row as a tick does, before it starts its run: both take the row, then
      // the key, in that order (the other order deadlocks a trigger and a tick of a keyed schedule)
      lockForFire: `SELECT * FROM ${S}.schedules WHERE name = $1 FOR NO KEY UPDATE`,
      all: `SELECT * FROM ${S}.schedules ORDER BY name`,
      // One snapshot, and what changed (the triggers of the schedule-changes migration stamp a
      // stored or changed row, and record a removal, with their transaction's id) by a transaction
      // the last read's snapshot did not see: one of an id at least its xmax, or one in progress
      // then (its xip). Through schedules_changed and schedule_removals_xid, whatever the number of
      // schedules, and whatever transactions stay open meanwhile (a long one holds back no mark).
      // A removal of a name stored now is left out: ids out of order (a dump restored into another
      // cluster) could else unmount a schedule whose row this read does not return; asked per
      // removal read (a subplan through the primary key: an anti-join may scan every schedule).
      changes: `
        SELECT m.snap, m.at, m.server, c.name, c.workflow, c.cron, c.timezone, c.removed
        FROM (SELECT txid_current_snapshot()::text AS snap, now() AS at, pg_postmaster_start_time()::text AS server) m
        LEFT JOIN LATERAL (
          SELECT name, workflow, cron, timezone, false AS removed FROM ${S}.schedules
          WHERE changed_xid >= $1::bigint OR changed_xid = ANY($2::bigint[])
          UNION ALL
          SELECT r.name, NULL, NULL, NULL, true FROM ${S}.schedule_removals r
          WHERE (r.removed_xid >= $1::bigint OR r.removed_xid = ANY($2::bigint[]))
            AND (SELECT t.name FROM ${S}.schedules t WHERE t.name = r.name) IS NULL
        ) c ON true`,
      pruneRemovals: `DELETE FROM ${S}.schedule_removals WHERE removed_at < now() - $1 * interval '1 millisecond'`,
      page: `SELECT * FROM ${S}.schedules WHERE ($1::text IS NULL OR name > $1) AND ($2::text IS NULL OR workflow = $2) ORDER BY name LIMIT $3`,
      // Inside a fire's transaction: a node that stops in the middle of it (paused process, lost
      // network) is cut off after this long, so the schedule row it locked does not hold up the
      // other nodes' ticks.
      fireSession: `SET LOCAL idle_in_transaction_session_timeout = 5000`,
      // The once-per-tick guard. The UPDATE locks the schedule row, so a second node running the
      // same tick waits for the first one's transaction and then finds last_tick_at >= its tick
      // (a stale tick of a node that was paused or down is refused the same way); a schedule fires
      // no tick from before it was stored (one removed and added again catches up nothing) — the
      // tick, named on the node's clock, moved onto the database's by how far the node's clock
      // ($8, as it sent this) is off it; the primary key of schedule_fires, whose rows outlive
      // their schedule until pruned, refuses a tick that was fired already under that name,
      // whatever happened to the row. A node whose copy of the workflow, cron or time zone is out
      // of date fires nothing.
      claimTick: `
        WITH s AS (
          UPDATE ${S}.schedules SET last_tick_at = $2, next_fire_at = $6
          WHERE name = $1 AND workflow = $7 AND cron = $4 AND timezone = $5
            AND created_at < $2::timestamptz + (clock_timestamp() - $8::timestamptz)
            AND (last_tick_at IS NULL OR last_tick_at < $2)
          RETURNING name, workflow, key, input
        ), f AS (
          INSERT INTO ${S}.schedule_fires (schedule, tick_at, node_id)
          SELECT name, $2, $3 FROM s
          ON CONFLICT (schedule, tick_at) DO NOTHING
          RETURNING schedule
        )
        SELECT s.name, s.workflow, s.key, s.input FROM s JOIN f ON f.schedule = s.name`,
      recordFire: `
        WITH f AS (
          UPDATE ${S}.schedule_fires SET run_id = $3, outcome = $4 WHERE schedule = $1 AND tick_at = $2
        )
        UPDATE ${S}.schedules SET last_fire_at = now(), last_run_id = coalesce($3, last_run_id), last_outcome = $4,
          last_error = NULL, fires = fires + 1
        WHERE name = $1`,
      recordFailure: `
        UPDATE ${S}.schedules SET last_outcome = 'failed', last_error = $2, failures = failures + 1 WHERE name = $1`,
      fires: `SELECT schedule, tick_at, node_id, run_id, outcome, fired_at FROM ${S}.schedule_fires WHERE schedule = $1 ORDER BY tick_at`,
      prune: `
        WITH d AS (
          DELETE FROM ${S}.schedule_fires WHERE ctid IN (
            SELECT ctid FROM ${S}.schedule_fires WHERE fired_at < now() - $1 * interval '1 millisecond' LIMIT $2)
          RETURNING 1
        ) SELECT count(*)::int AS n FROM d`,
    };
  }

  /** Creates or replaces a schedule (its fire history and counters are kept). */
  async upsert(q: Queryable, s: NewSchedule): Promise<ScheduleRow> {
    const [row] = await q.query<ScheduleRow>(this.sql.upsert, [
      s.name,
      s.workflow,
      s.cron,
      s.timezone,
      s.key,
      s.input === undefined ? null : JSON.stringify(s.input),
      s.source,
      s.next_fire_at,
    ]);
    return row;
  }

  /** Deletes decorator schedules of `workflows` whose name is not in `keep`; returns their names. */
  async dropStaleDecorated(q: Queryable, workflows: string[], keep: string[]): Promise<string[]> {
    return (await q.query<{ name: string }>(this.sql.dropStaleDecorated, [workflows, keep])).map((r) => r.name);
  }

  /** Deletes a schedule (its fire records stay until pruned); false when there was none. */
  async remove(q: Queryable, name: string): Promise<boolean> {
    return (await q.query(this.sql.remove, [name])).length > 0;
  }

  /** The schedule, its row locked until the caller's transaction ends (a fire's first statement); undefined when there is none. */
  async lockForFire(q: Queryable, name: string): Promise<ScheduleRow | undefined> {
    const [row] = await q.query<ScheduleRow>(this.sql.lockForFire, [name]);
    return row;
  }

  /** Every stored schedule, by name. */
  all(q: Queryable): Promise<ScheduleRow[]> {
    return q.query<ScheduleRow>(this.sql.all);
  }

  /** The schedules changed since the read whose `mark` is `since` ({@link EVERY_CHANGE}: every schedule, and every removal kept). */
  async changes(q: Queryable, since: ScheduleMark): Promise<ScheduleChanges> {
    const rows = await q.query<ScheduleCopy & { snap: string; at: Date; server: string; removed: boolean | null }>(this.sql.changes, [since.xmax, since.xip]);
    // xmin:xmax:xip1,xip2,...
    const [, xmax, xip] = rows[0].snap.split(':');
    const mark = { xmax, xip: xip ? xip.split(',') : [] };
    const out: ScheduleChanges = { mark, at: new Date(rows[0].at).getTime(), server: rows[0].server, rows: [], removed: [] };
    for (const r of rows) {
      if (r.removed === true) out.removed.push(r.name);
      else if (r.removed === false) out.rows.push({ name: r.name, workflow: r.workflow, cron: r.cron, timezone: r.timezone });
    }
    return out;
  }

  /** Deletes the records of removals older than `olderThanMs`. */
  async pruneRemovals(q: Queryable, olderThanMs: number): Promise<void> {
    await q.query(this.sql.pruneRemovals, [olderThanMs]);
  }

  /** At most `limit` schedules (of `workflow`, when given) named after `after` (none: from the first), by name. */
  page(q: Queryable, after: string | null, workflow: string | null, limit: number): Promise<ScheduleRow[]> {
    return q.query<ScheduleRow>(this.sql.page, [after, workflow, limit]);
  }

  /** First statement of a fire's transaction (see `fireSession` above). */
  async fireSession(q: Queryable): Promise<void> {
    await q.query(this.sql.fireSession);
  }

  /**
   * Takes tick `tickAt` of schedule `copy.name` for this node, if no node has and the stored
   * workflow, cron and timezone are still the ones of this node's copy; returns what the run
   * needs, or undefined.
   */
  async claimTick(q: Queryable, copy: ScheduleCopy, tickAt: Date, nodeId: string, nextFireAt: Date | null): Promise<ClaimedTick | undefined> {
    const { name, workflow, cron, timezone } = copy;
    const nodeNow = new Date(Date.now()).toISOString();
    const values = [name, tickAt.toISOString(), nodeId, cron, timezone, nextFireAt?.toISOString() ?? null, workflow, nodeNow];
    const [row] = await q.query<ClaimedTick>(this.sql.claimTick, values);
    return row;
  }

  /** Records what a fire (tick `tickAt`, or null for a trigger) started. */
  async recordFire(q: Queryable, name: string, tickAt: Date | null, runId: string | null, outcome: string): Promise<void> {
    await q.query(this.sql.recordFire, [name, tickAt?.toISOString() ?? null, runId, outcome]);
  }

  /** Counts a fire that could not start its run. */
  async recordFailure(q: Queryable, name: string, error: unknown): Promise<void> {
    await q.query(this.sql.recordFailure, [name, JSON.stringify(error)]);
  }

  /** The fired ticks of a schedule, oldest first. */
  fires(q: Queryable, name: string) {
    return q.query<{ schedule: string; tick_at: Date; node_id: string; run_id: string | null; outcome: string | null; fired_at: Date }>(this.sql.fires, [name]);
  }

  /** Deletes up to `batch` fire records older than `olderThanMs`; returns how many. */
  async prune(q: Queryable, olderThanMs: number, batch: number): Promise<number> {
    const [row] = await q.query<{ n: number }>(this.sql.prune, [olderThanMs, batch]);
    return row.n;
  }
}
