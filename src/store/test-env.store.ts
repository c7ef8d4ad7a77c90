import type { ClaimLimits } from './controls.store';
import type { Queryable } from './db';
import { notPaused } from './sql';

/**
 * The statements of the testing kit (`nestjs-durable/testing`) on one schema: moving every
 * not-yet-due time earlier, telling whether anything is due or going, and dropping the schema.
 */
export class TestEnvStore {
  private readonly sql: Record<string, string>;

  constructor(
    schema: string,
    /** Channel the schema's workers LISTEN on. */
    private readonly channel: string,
  ) {
    const S = `"${schema}"`;
    const by = `$1 * interval '1 millisecond'`;
    // `t > now()` only: a time already due stays as it is; 'infinity' (a run waiting behind a
    // holder) stays infinite. A never-claimed run's deadline (run_at + timeout) is stored so that
    // it moves with its run; a flow node waiting for its dependencies has none yet (its timeout
    // counts from when it becomes due).
    const later = (t: string) => `CASE WHEN ${t} > now() THEN ${t} - ${by} ELSE ${t} END`;
    this.sql = {
      skip: `
        WITH r AS (
          UPDATE ${S}.runs SET
            run_at = CASE WHEN status IN ('pending', 'compensating') THEN ${later('run_at')} ELSE run_at END,
            debounce_until = ${later('debounce_until')},
            wake_at = ${later('wake_at')},
            deadline_at = CASE WHEN deadline_at IS NULL AND coalesce(deps_left, 0) > 0 THEN NULL
                               WHEN deadline_at IS NULL AND timeout_ms IS NOT NULL AND isfinite(run_at)
                               THEN ${later("run_at + timeout_ms * interval '1 millisecond'")}
                               ELSE ${later('deadline_at')} END,
            -- a limited run's begin time: its workflow's rate window counts from it
            started_at = CASE WHEN group_key IS NOT NULL THEN started_at - ${by} ELSE started_at END
          WHERE status IN ('pending', 'running', 'waiting', 'compensating')
            AND (run_at > now() OR debounce_until > now() OR wake_at > now() OR deadline_at > now() OR timeout_ms IS NOT NULL)
          RETURNING id
        ), begun AS (
          -- the other limited runs begun (finished ones among them), whose begin times the window reads too
          UPDATE ${S}.runs SET started_at = started_at - ${by}
          WHERE group_key IS NOT NULL AND started_at IS NOT NULL AND id NOT IN (SELECT id FROM r)
        ), w AS (
          -- after the runs (it reads r): a run's lock is taken before its waits', as a send and a step do;
          -- an event or input wait's end moves even once due (until a worker marks it timed out), and
          -- kept events move with it: an event kept before a wait's end stays before it, one kept
          -- after stays after (only those are its answer, see EventsStore.receive)
          UPDATE ${S}.waits SET until = until - ${by}
          WHERE (SELECT count(*) FROM r) >= 0 AND (until > now() OR (kind IN ('event', 'input') AND until IS NOT NULL AND NOT timed_out))
        ), e AS (
          UPDATE ${S}.events SET created_at = created_at - ${by} WHERE (SELECT count(*) FROM r) >= 0 AND received_at IS NULL
        ), s AS (
          UPDATE ${S}.schedules SET next_fire_at = next_fire_at - ${by} WHERE next_fire_at > now()
        ), h AS (
          UPDATE ${S}.flow_hooks SET due_at = due_at - ${by} WHERE due_at > now() AND node_id IS NULL
        )
        -- every data-modifying part of a WITH runs to completion, read or not; the wake-up is sent at commit
        SELECT pg_notify($2, '')`,
      // due pending runs (deps all done), due waiting runs, running and compensating ones, due hooks and
      // hooks being called (a hook's back-off moves earlier with the rest; a call's lease does not).
      // "Due" is by clock_timestamp(), not now(): a statement's now() is taken before its snapshot,
      // so a run ended (or given back) by a transaction that committed in between is seen with a
      // time later than now() — its hook, due at once, would look not yet due.
      // A due pending run of a workflow held back is not going: paused by an operator, or not begun
      // yet with its rate window full ($1: the rate limits, { workflow, lim, ms, grouped }; the
      // window counts the runs of the workflow, or of the run's group, begun within ms, as a claim does).
      going: `
        SELECT
          (SELECT count(*) FROM ${S}.runs p WHERE status IN ('running', 'compensating')
             OR (status = 'pending' AND run_at <= clock_timestamp() AND coalesce(deps_left, 0) = 0 AND ${notPaused(S, 'p.workflow')}
                 AND (p.started_at IS NOT NULL OR NOT EXISTS (
                   SELECT 1 FROM jsonb_to_recordset($1::jsonb) AS l (workflow text, lim int, ms bigint, grouped boolean)
                   WHERE l.workflow = p.workflow AND l.lim <= (
                     SELECT count(*) FROM ${S}.runs b
                     WHERE b.workflow = l.workflow AND b.group_key IS NOT NULL AND (NOT l.grouped OR b.group_key = p.group_key)
                       AND b.started_at > clock_timestamp() - l.ms * interval '1 millisecond'))))
             OR (status = 'waiting' AND wake_at <= clock_timestamp()))::int
          + (SELECT count(*) FROM ${S}.flow_hooks WHERE due_at <= clock_timestamp() OR node_id IS NOT NULL)::int AS n`,
      wake: `SELECT pg_notify($1, '')`,
      drop: `DROP SCHEMA IF EXISTS ${S} CASCADE`,
    };
  }

  /**
   * Moves every not-yet-due time of the schema's runs `ms` earlier, in one statement: pending and
   * compensating runs' `run_at` (delays, retry back-offs, debounce windows) and debounce limits,
   * waiting runs' `wake_at`, deadlines, recorded waits (sleeps, wait timeouts), schedules' next
   * ticks and flow hooks, the times of events kept (with the ends of the waits they may answer) and
   * the begin times of limited workflows' runs (their rate windows); then wakes the workers.
   */
  async skip(q: Queryable, ms: number): Promise<void> {
    await q.query(this.sql.skip, [ms, this.channel]);
  }

  /**
   * How many runs are due, running or compensating (and flow hooks due); a due run that its
   * workflow's pause or full rate window (`limits`, as the limited claim reads them) holds back is not counted.
   */
  async going(q: Queryable, limits: ClaimLimits[]): Promise<number> {
    const rates = limits.flatMap(({ workflow, rateLimit: r }) => (r ? [{ workflow, lim: r.limit, ms: r.periodMs, grouped: r.grouped }] : []));
    const [row] = await q.query<{ n: number }>(this.sql.going, [JSON.stringify(rates)]);
    return row.n;
  }

  /** Wakes the schema's workers. */
  async wake(q: Queryable): Promise<void> {
    await q.query(this.sql.wake, [this.channel]);
  }

  /** Drops the schema and everything in it. */
  async drop(q: Queryable): Promise<void> {
    await q.query(this.sql.drop);
  }
}
