import type { Queryable } from './db';

/** What a node says in its heartbeat. */
export interface NodeBeat {
  nodeId: string;
  /** Shown by `listNodes` (concurrency, workflows, …). */
  info: object;
  /** Runs it executes (or holds claimed for its slots), with the lease epoch of their claim. */
  running: { id: string; epoch: number }[];
  /** The latest `ctx.progress` values of its runs not written yet. */
  progress: ProgressReport[];
  /** Length of the maintenance lease it takes or renews. */
  leaseMs: number;
  /**
   * Every claim of this node numbered below this one was answered and what it took launched: runs
   * it holds beyond `running` claimed by those are strays, given back (see the worker's `ClaimSequence`).
   */
  answeredBelow: number;
}

/** A run's progress value, written by the heartbeat while the claim of `epoch` still owns the run. */
export interface ProgressReport {
  id: string;
  epoch: number;
  value: unknown;
}

/** What a heartbeat learnt. */
export interface BeatResult {
  /** Its row had to be created: first beat, or the node had been declared dead. */
  fresh: boolean;
  /** It holds the maintenance lease. */
  leader: boolean;
  /** Runs among `running` it no longer owns (cancelled, finished, or recovered elsewhere). */
  lost: string[];
  /** Runs it held without running them, given back. */
  strays: number;
  /** The highest claim number on the runs it holds (before the give-back), if any: its next claims are numbered above it. */
  maxSeq: number | null;
}

/** A `nodes` row as `list` reads it. */
export interface NodeRow {
  id: string;
  started_at: Date;
  heartbeat_at: Date;
  /** What the node said in its last heartbeat (`concurrency`, `workflows`, …). */
  info: { concurrency?: number; workflows?: string[] };
  alive: boolean;
  running: number;
}

/** Every statement on the `nodes` and `leases` tables, by name; `S` is the validated, quoted schema. */
export function nodesStatements(S: string): Record<string, string> {
  return {
    // One round trip per heartbeat: renews this node (re-creating its row if it had been declared
    // dead: fresh), renews or takes the maintenance lease when free or expired ($5: its length),
    // returns the runs among $3/$4 (id, epoch) it no longer owns, and gives back the runs it holds
    // but does not run (a claim committed whose reply never arrived), without the attempt that
    // claim counted — only those whose claim is numbered below $6: the claims still out (their
    // runs not known to the node yet) have numbers from $6 up. A run claimed before claims were
    // numbered counts as answered. maxSeq: the highest number on the node's runs (see ClaimSequence).
    beat: `
        WITH hb AS (
          INSERT INTO ${S}.nodes (id, info) VALUES ($1, $2)
          ON CONFLICT (id) DO UPDATE SET heartbeat_at = now(), info = EXCLUDED.info
          RETURNING (xmax = 0) AS fresh
        ), lease AS (
          INSERT INTO ${S}.leases AS l (name, holder, expires_at) VALUES ('maintenance', $1, now() + $5 * interval '1 millisecond')
          ON CONFLICT (name) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at
          WHERE l.holder = EXCLUDED.holder OR l.expires_at < now()
          RETURNING holder
        ), lost AS (
          -- a scalar subquery per run, not a join: each is one primary-key probe whatever the
          -- statistics say (with stale ones a join read all of runs on every beat)
          SELECT x.id FROM unnest($3::uuid[], $4::int[]) AS x (id, epoch)
          WHERE (SELECT r.epoch = x.epoch AND r.status IN ('running', 'compensating') FROM ${S}.runs r WHERE r.id = x.id) IS NOT TRUE
        ), mine AS (
          -- the runs the database says this node holds, read once for strays and maxSeq; each status
          -- in its own term: the partial indexes runs_running and runs_compensating answer them
          SELECT r.id, r.claim_seq FROM ${S}.runs r
          WHERE (r.status = 'running' AND r.node_id = $1) OR (r.status = 'compensating' AND r.node_id = $1)
        ), strays AS (
          UPDATE ${S}.runs r SET status = CASE WHEN r.status = 'compensating' THEN 'compensating' ELSE 'pending' END,
            node_id = NULL, run_at = now(), attempt = greatest(r.attempt - 1, 0)
          -- the ids as an array: each stray (usually none) is one primary-key probe
          WHERE r.id = ANY (ARRAY(SELECT id FROM mine WHERE coalesce(claim_seq, 0) < $6::bigint AND id <> ALL ($3::uuid[])))
            AND r.status IN ('running', 'compensating') AND r.node_id = $1
          RETURNING r.id
        ), progress AS (
          -- $7: the progress values reported since the last beat, each written while its claim owns the run
          UPDATE ${S}.runs r SET progress = v.value
          FROM jsonb_to_recordset($7::jsonb) AS v (id uuid, epoch integer, value jsonb)
          WHERE r.id = v.id AND r.epoch = v.epoch AND r.status IN ('running', 'compensating')
        )
        SELECT (SELECT fresh FROM hb) AS fresh, EXISTS (SELECT 1 FROM lease) AS leader,
          ARRAY(SELECT id FROM lost) AS lost, (SELECT count(*) FROM strays)::int AS strays,
          (SELECT max(claim_seq) FROM mine)::float8 AS "maxSeq"`,
    recover: `
        WITH dead AS (
          DELETE FROM ${S}.nodes WHERE heartbeat_at < now() - $1 * interval '1 millisecond' RETURNING id
        ), orphans AS (
          UPDATE ${S}.runs r SET status = CASE WHEN r.status = 'compensating' THEN 'compensating' ELSE 'pending' END,
            node_id = NULL, run_at = now()
          WHERE (r.status = 'running' OR (r.status = 'compensating' AND r.node_id IS NOT NULL))
            AND (r.node_id IN (SELECT id FROM dead)
                 OR NOT EXISTS (SELECT 1 FROM ${S}.nodes n WHERE n.id = r.node_id))
          RETURNING r.id
        )
        SELECT (SELECT count(*) FROM dead)::int AS nodes, (SELECT count(*) FROM orphans)::int AS runs`,
    remove: `DELETE FROM ${S}.nodes WHERE id = $1`,
    // alive: heard from within $1 ms; running: its runs, through the partial index runs_running
    list: `
        SELECT n.id, n.started_at, n.heartbeat_at, n.info, n.heartbeat_at > now() - $1 * interval '1 millisecond' AS alive,
          (SELECT count(*) FROM ${S}.runs r WHERE r.status = 'running' AND r.node_id = n.id)::int AS running
        FROM ${S}.nodes n ORDER BY n.id LIMIT $2`,
  };
}

/** Statements on the `nodes` and `leases` tables (one heartbeat row per live node, the maintenance lease). */
export class NodesStore {
  private readonly sql: Record<string, string>;

  constructor(schema: string) {
    this.sql = nodesStatements(`"${schema}"`);
  }

  /**
   * Records this node's heartbeat and renews (or takes) the maintenance lease for `leaseMs`; see the
   * statement.
   */
  async beat(q: Queryable, beat: NodeBeat): Promise<BeatResult> {
    const { running } = beat;
    const [row] = await q.query<BeatResult>(this.sql.beat, [
      beat.nodeId,
      JSON.stringify(beat.info),
      running.map((r) => r.id),
      running.map((r) => r.epoch),
      beat.leaseMs,
      beat.answeredBelow,
      JSON.stringify(beat.progress),
    ]);
    return row;
  }

  /** Deletes nodes silent for `timeoutMs` and puts their (and any orphaned) running runs back to pending. */
  async recoverDead(q: Queryable, timeoutMs: number): Promise<{ nodes: number; runs: number }> {
    const [row] = await q.query<{ nodes: number; runs: number }>(this.sql.recover, [timeoutMs]);
    return row;
  }

  /** The first `limit` nodes by id; `alive` when heard from within `timeoutMs`. */
  list(q: Queryable, timeoutMs: number, limit: number): Promise<NodeRow[]> {
    return q.query<NodeRow>(this.sql.list, [timeoutMs, limit]);
  }

  /** Removes this node's row (clean shutdown). */
  async remove(q: Queryable, nodeId: string): Promise<void> {
    await q.query(this.sql.remove, [nodeId]);
  }
}
