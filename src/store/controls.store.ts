import type { Db, Queryable } from './db';
import { claimUpdate, inClaimOrder } from './runs.sql';
import { nodeMayClaim } from './sql';
import type { ClaimBy, ClaimedRow } from './runs.types';
import type { RunStatus } from '../domain/run-info';

/** A workflow's limits as the claim of its runs needs them (see `WorkflowControls`). */
export interface ClaimLimits {
  workflow: string;
  concurrency?: { limit: number; grouped: boolean };
  rateLimit?: { limit: number; periodMs: number; grouped: boolean };
}

/** What a limited claim took, and when a rate limit that held it back may let it take more. */
export interface LimitedClaim {
  rows: ClaimedRow[];
  /** Milliseconds until the earliest run begun inside a full rate-limit window leaves it (none: no window was full). */
  retryInMs?: number;
}

/** A run of a limited workflow as a sweep for runs without a group reads it (see `ControlsStore.openPage`). */
export interface OpenRun {
  id: string;
  key: string | null;
  /** Its input when it has no group (else null: not needed). */
  input: unknown;
  /** It has no group. */
  ungrouped: boolean;
  /** Its due time as PostgreSQL writes it (exact to the microsecond, or `infinity`): where the next page begins. */
  at: string;
}

/** The columns of an {@link OpenRun}. */
const OPEN_RUN = `id, run_at::text AS at, key, CASE WHEN group_key IS NULL THEN input END AS input, group_key IS NULL AS ungrouped`;

/** Runs of workflow $3 in group `g.k` matching `cond`, counting at most `cap`. */
const bounded = (S: string, cond: string, cap: string, group: boolean): string =>
  `(SELECT count(*)::int FROM (SELECT 1 FROM ${S}.runs WHERE workflow = $3 AND group_key IS NOT NULL${group ? ' AND group_key = g.k' : ''} AND ${cond} LIMIT ${cap}) x)`;

/**
 * Statements on `workflow_controls` (which workflows an operator paused, and one row per limited
 * workflow that its claims lock), and the claim of a limited workflow's runs. The plain claim
 * (runs.sql.ts) reads the pauses too, so every node obeys a pause from its next claim on.
 */
export class ControlsStore {
  private readonly sql: Record<string, string>;

  constructor(
    schema: string,
    /** Channel the workers LISTEN on: a resume wakes them. */
    readonly channel: string,
  ) {
    const S = `"${schema}"`;
    // a run holds its place while a node executes it: running, or compensating on a node
    const running = (group: boolean) => bounded(S, `(status = 'running' OR (status = 'compensating' AND node_id IS NOT NULL))`, '$4::int', group);
    const begun = (group: boolean) => bounded(S, `started_at > statement_timestamp() - $7::bigint * interval '1 millisecond'`, '$6::int', group);
    this.sql = {
      // $2 true: paused; false: resumed, and the workers are woken (in the same transaction: after
      // it commits). updated_at moves only when paused does: the backlog read (runs.sql.ts) counts
      // a run's wait from its workflow's last resume, which a pause or resume that changes nothing
      // must not move (a resume of a workflow not paused writes no row)
      set: `
        WITH p AS (
          INSERT INTO ${S}.workflow_controls (workflow, paused) SELECT $1, true WHERE $2
          ON CONFLICT (workflow) DO UPDATE SET paused = true,
            updated_at = CASE WHEN ${S}.workflow_controls.paused THEN ${S}.workflow_controls.updated_at ELSE now() END
        ), r AS (
          UPDATE ${S}.workflow_controls SET paused = false, updated_at = now() WHERE workflow = $1 AND paused AND NOT $2
        )
        SELECT CASE WHEN NOT $2 THEN pg_notify($3, '') END AS woke`,
      paused: `SELECT workflow FROM ${S}.workflow_controls WHERE paused ORDER BY workflow`,
      // every workflow with a row: paused now or before, or limited (a worker with its limits started)
      controlled: `SELECT workflow FROM ${S}.workflow_controls ORDER BY workflow`,
      ensure: `INSERT INTO ${S}.workflow_controls (workflow) SELECT unnest($1::text[]) ON CONFLICT (workflow) DO NOTHING`,
      // the claims of a limited workflow take turns across the cluster: each counts what the
      // others committed before it got the lock (its next statement's snapshot), and stamps the
      // runs it begins with that statement's time (not the transaction's, which began before the
      // wait for the lock), so begin times follow the order of the claims
      lock: `SELECT workflow, paused FROM ${S}.workflow_controls WHERE workflow = ANY($1::text[]) ORDER BY workflow FOR UPDATE`,
      // Claims up to $2 runs of limited workflow $3 for node $1 (alive within $9 ms; $10: the
      // claim's number). Limits: $4 concurrency ($5: per group), $6 runs begun per $7 ms ($8: per
      // group); NULL: none. g: the groups with runs to claim, by a skip scan of runs_group_open
      // (one probe per group); per group, what its limits leave free, then its due runs by priority
      // and age: the first pending ones from runs_group_due (no sort of the whole group), with those woken from a wait or a
      // released compensation (runs_group_woken); across groups the first of each group come first (fair: a group
      // with many due runs does not starve one with a few); a limit of the whole workflow caps the
      // total. A rate limit counts the runs that begin: only a run never claimed (fresh) needs room
      // in its window (fresh_free, fresh_room); a retry, a wake-up or a compensation goes on within
      // the concurrency limit alone.
      claim: `
        WITH RECURSIVE alive AS (
          ${nodeMayClaim(S, '$1', '$9')}
        ), g AS (
          SELECT (SELECT min(group_key) FROM ${S}.runs
                  WHERE workflow = $3 AND group_key IS NOT NULL AND status IN ('pending', 'waiting', 'compensating')) AS k
          UNION ALL
          SELECT (SELECT min(group_key) FROM ${S}.runs
                  WHERE workflow = $3 AND group_key > g.k AND status IN ('pending', 'waiting', 'compensating'))
          FROM g WHERE g.k IS NOT NULL
        ), whole AS (
          SELECT least($2::int, CASE WHEN $4::int IS NOT NULL AND NOT $5::boolean THEN $4 - ${running(false)} END) AS room,
            CASE WHEN $6::int IS NOT NULL AND NOT $8::boolean THEN $6 - ${begun(false)} END AS fresh_room
        ), cand AS (
          SELECT d.id, d.priority, d.run_at, d.woke, d.fresh, row_number() OVER (PARTITION BY g.k ORDER BY d.priority DESC, d.run_at) AS rn
          FROM g CROSS JOIN LATERAL (
            SELECT least($2::int, CASE WHEN $4::int IS NOT NULL AND $5::boolean THEN $4 - ${running(true)} END) AS free,
              CASE WHEN $6::int IS NOT NULL AND $8::boolean THEN $6 - ${begun(true)} END AS fresh_free
          ) f CROSS JOIN LATERAL (
            SELECT * FROM (
              SELECT * FROM (SELECT id, priority, run_at, false AS woke, true AS fresh FROM ${S}.runs
                WHERE workflow = $3 AND group_key = g.k AND status = 'pending' AND run_at <= now() AND started_at IS NULL
                ORDER BY priority DESC, run_at LIMIT greatest(least(f.free, f.fresh_free, (SELECT fresh_room FROM whole)), 0) FOR UPDATE SKIP LOCKED) p
              UNION ALL
              SELECT * FROM (SELECT id, priority, run_at, false, false FROM ${S}.runs
                WHERE workflow = $3 AND group_key = g.k AND status = 'pending' AND run_at <= now() AND started_at IS NOT NULL
                ORDER BY priority DESC, run_at LIMIT greatest(f.free, 0) FOR UPDATE SKIP LOCKED) r
              UNION ALL
              SELECT * FROM (SELECT id, priority, run_at, status = 'waiting', false FROM ${S}.runs
                WHERE workflow = $3 AND group_key = g.k
                  AND ((status = 'waiting' AND wake_at <= now()) OR (status = 'compensating' AND node_id IS NULL AND run_at <= now()))
                LIMIT greatest(f.free, 0) FOR UPDATE SKIP LOCKED) w
            ) u ORDER BY priority DESC, run_at LIMIT greatest(f.free, 0)
          ) d
          WHERE g.k IS NOT NULL AND EXISTS (SELECT 1 FROM alive)
        ), c AS (
          -- fresh_n: a fresh run's place among the fresh ones, in the order the room is filled
          SELECT id, woke FROM (
            SELECT cand.*, count(*) FILTER (WHERE fresh) OVER (ORDER BY rn, priority DESC, run_at, id ROWS UNBOUNDED PRECEDING) AS fresh_n
            FROM cand
          ) x
          WHERE NOT fresh OR fresh_n <= coalesce((SELECT fresh_room FROM whole), fresh_n)
          ORDER BY rn, priority DESC, run_at LIMIT greatest((SELECT room FROM whole), 0)
        )
        ${claimUpdate(S, '$10', 'statement_timestamp()')}`,
      // a page of the runs of workflow $1 in status $2, at most $5 after ($3: a run_at as text, $4),
      // each read once whether it has a group or not: pending ones through runs_pending in order
      // of due time; the others (openPageById: after id $3, at most $4) through
      // runs_workflow_status_other or runs_running by id
      openPage: `
        SELECT ${OPEN_RUN} FROM ${S}.runs
        WHERE workflow = $1 AND status = $2 AND run_at >= $3::timestamptz AND (run_at > $3::timestamptz OR id > $4::uuid)
        ORDER BY run_at, id LIMIT $5`,
      openPageById: `
        SELECT ${OPEN_RUN} FROM ${S}.runs WHERE workflow = $1 AND status = $2 AND id > $3::uuid
        ORDER BY id LIMIT $4`,
      // the groups of $1 ({ id, g }), for runs still without one; a row another transaction holds is skipped
      setGroups: `
        UPDATE ${S}.runs r SET group_key = v.g FROM jsonb_to_recordset($1::jsonb) AS v (id uuid, g text)
        WHERE r.id = v.id AND r.group_key IS NULL AND r.id = ANY (ARRAY(
          SELECT l.id FROM ${S}.runs l WHERE l.id = ANY (ARRAY(SELECT (e->>'id')::uuid FROM jsonb_array_elements($1::jsonb) e))
          FOR NO KEY UPDATE SKIP LOCKED))
        RETURNING r.id`,
      // when the rate window of limited workflow $1 ($2 runs per $3 ms; $4: per group) lets another
      // run begin: its earliest begun run leaves the window. Without groups, only a full window
      // counts (at most $2 rows read by the index on start times); with groups, any group's window
      window: `
        SELECT ceil(extract(epoch FROM min(started_at) + $3::bigint * interval '1 millisecond' - statement_timestamp()) * 1000)::bigint AS ms
        FROM (SELECT started_at FROM ${S}.runs
              WHERE workflow = $1 AND group_key IS NOT NULL AND started_at > statement_timestamp() - $3::bigint * interval '1 millisecond'
              ORDER BY started_at LIMIT $2::int) w
        HAVING $4::boolean OR count(*) >= $2::int`,
    };
  }

  /** Pauses (`paused`) or resumes a workflow on every node; a resume wakes the workers. */
  async setPaused(q: Queryable, workflow: string, paused: boolean): Promise<void> {
    await q.query(this.sql.set, [workflow, paused, this.channel]);
  }

  /** The names of the paused workflows. */
  async paused(q: Queryable): Promise<Set<string>> {
    return new Set((await q.query<{ workflow: string }>(this.sql.paused)).map((r) => r.workflow));
  }

  /** The names of the workflows with a row: paused now or before, or limited. */
  async controlled(q: Queryable): Promise<Set<string>> {
    return new Set((await q.query<{ workflow: string }>(this.sql.controlled)).map((r) => r.workflow));
  }

  /** Makes the row each limited workflow's claims lock (once per worker start). */
  async ensure(q: Queryable, workflows: string[]): Promise<void> {
    await q.query(this.sql.ensure, [workflows]);
  }

  /**
   * Up to `limit` runs of `workflow` in `status` after `after` (a page of a sweep; pending runs in
   * order of due time, the others by id), each saying whether it has no group (see {@link OpenRun}).
   */
  openPage(q: Queryable, workflow: string, status: RunStatus, after: { at: string; id: string }, limit: number): Promise<OpenRun[]> {
    if (status === 'pending') return q.query<OpenRun>(this.sql.openPage, [workflow, status, after.at, after.id, limit]);
    return q.query<OpenRun>(this.sql.openPageById, [workflow, status, after.id, limit]);
  }

  /** Gives each run of `groups` its group, unless it has one or another transaction holds its row; returns how many it gave. */
  async setGroups(q: Queryable, groups: { id: string; g: string }[]): Promise<number> {
    return (await q.query(this.sql.setGroups, [JSON.stringify(groups)])).length;
  }

  /**
   * Claims up to `free` runs of limited workflows for `nodeId` within their limits, in one
   * transaction that locks the workflows' rows first (claims of one limited workflow take turns
   * across the cluster); a paused workflow is skipped. When a rate-limited workflow gave fewer runs
   * than asked, also says when its window lets more begin (the worker claims again then).
   */
  claim(db: Db, by: ClaimBy, free: number, limits: ClaimLimits[]): Promise<LimitedClaim> {
    return db.tx(async (q) => {
      const locked = await q.query<{ workflow: string; paused: boolean }>(this.sql.lock, [limits.map((l) => l.workflow)], 'durable_claim_limited_lock');
      const paused = new Set(locked.filter((r) => r.paused).map((r) => r.workflow));
      const claimed: ClaimedRow[] = [];
      let retryInMs: number | undefined;
      for (const l of limits) {
        if (claimed.length >= free || paused.has(l.workflow)) continue;
        const { concurrency: c, rateLimit: r } = l;
        const rows = await q.query<ClaimedRow>(
          this.sql.claim,
          [
            by.nodeId,
            free - claimed.length,
            l.workflow,
            c?.limit ?? null,
            c?.grouped ?? false,
            r?.limit ?? null,
            r?.periodMs ?? null,
            r?.grouped ?? false,
            by.nodeTimeoutMs,
            by.seq,
          ],
          'durable_claim_limited',
        );
        claimed.push(...rows);
        if (r && claimed.length < free) retryInMs = min(retryInMs, await this.windowFrees(q, l.workflow, r));
      }
      return { rows: inClaimOrder(claimed), retryInMs };
    });
  }

  private async windowFrees(q: Queryable, workflow: string, r: NonNullable<ClaimLimits['rateLimit']>): Promise<number | undefined> {
    const [row] = await q.query<{ ms: string | null }>(this.sql.window, [workflow, r.limit, r.periodMs, r.grouped], 'durable_claim_limited_window');
    return row?.ms == null ? undefined : Math.max(0, Number(row.ms));
  }
}

const min = (a: number | undefined, b: number | undefined): number | undefined => (a === undefined ? b : b === undefined ? a : Math.min(a, b));
