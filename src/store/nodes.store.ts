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
  /**
   * The number of this process's first claim: a run it holds numbered below was claimed by an
   * earlier process of the same node id (which crashed); given back, its interrupted attempt counts.
   */
  firstClaim: number;
  /**
   * This process's mark (a uuid it drew at boot). A row last beaten by another process means
   * another process uses, or used, the same node id: the beat gives back no stray then (the runs
   * it does not know may be the other process's), and renews no lease that process took.
   */
  process: string;
  /**
   * Whether strays may be given back at all: not until the process has had the node id to itself
   * (no other mark seen) for a whole `nodeTimeout` (the worker's heartbeat decides).
   */
  giveBack: boolean;
  /**
   * Runs whose step (or compensation) this process cut short when it fenced itself, with the lease
   * epoch of their claim: given back as strays, their interrupted attempt counts.
   */
  cutShort?: { id: string; epoch: number }[];
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
  /** Of those, the runs an earlier process of its node id was executing (their attempt counted). */
  interrupted: number;
  /** Runs whose progress was not written because a transaction held their row: reported again at the next beat. */
  progressHeld: string[];
  /** The highest claim number on the runs it holds (before the give-back), if any: its next claims are numbered above it. */
  maxSeq: number | null;
  /** The node's row was last beaten by another process (or one without a mark): see {@link NodeBeat.process}. */
  otherProcess: boolean;
  /** Runs among `cutShort` the node still holds under that epoch after this beat (not given back yet). */
  cutShortHeld: string[];
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
    // but does not run — only those whose claim is numbered below $6: the claims still out (their
    // runs not known to the node yet) have numbers from $6 up. One numbered from $8 (this process's
    // first claim) up is a claim whose reply never arrived: given back without the attempt it
    // counted. One numbered below $8 (or before claims were numbered) was claimed by an earlier
    // process of this node id, interrupted by its end: its attempt counts, as when a dead node's
    // runs are recovered. maxSeq: the highest number on the node's runs (see ClaimSequence). It
    // never waits for a run's row: a row another transaction holds is given back, or has its
    // progress ($7) written, at a later beat (progressHeld). Strays are given back only when this
    // process ($9) beat last (prev): another process of the same node id may run the runs this one
    // does not know; the lease is renewed only by the process that took it. A stray among $11/$12
    // (id, epoch: its step was cut short when this process fenced itself) keeps its attempt too.
    beat: `
        WITH prev AS (
          SELECT process FROM ${S}.nodes WHERE id = $1
        ), hb AS (
          INSERT INTO ${S}.nodes (id, info, process) VALUES ($1, $2, $9)
          ON CONFLICT (id) DO UPDATE SET heartbeat_at = now(), info = EXCLUDED.info, process = EXCLUDED.process
          RETURNING (xmax = 0) AS fresh
        ), lease AS (
          INSERT INTO ${S}.leases AS l (name, holder, process, expires_at) VALUES ('maintenance', $1, $9, now() + $5 * interval '1 millisecond')
          ON CONFLICT (name) DO UPDATE SET holder = EXCLUDED.holder, process = EXCLUDED.process, expires_at = EXCLUDED.expires_at
          WHERE (l.holder = EXCLUDED.holder AND l.process = EXCLUDED.process) OR l.expires_at < now()
          RETURNING holder
        ), lost AS (
          -- a scalar subquery per run, not a join: each is one primary-key probe whatever the
          -- statistics say (with stale ones a join read all of runs on every beat)
          SELECT x.id FROM unnest($3::uuid[], $4::int[]) AS x (id, epoch)
          WHERE (SELECT r.epoch = x.epoch AND r.status IN ('running', 'compensating') FROM ${S}.runs r WHERE r.id = x.id) IS NOT TRUE
        ), mine AS (
          -- the runs the database says this node holds, read once for strays and maxSeq; each status
          -- in its own term: the partial indexes runs_running and runs_compensating answer them
          SELECT r.id, r.epoch, r.claim_seq FROM ${S}.runs r
          WHERE (r.status = 'running' AND r.node_id = $1) OR (r.status = 'compensating' AND r.node_id = $1)
        ), cut AS (
          SELECT c.id, c.epoch FROM unnest($11::uuid[], $12::int[]) AS c (id, epoch)
        ), strays AS (
          UPDATE ${S}.runs r SET status = CASE WHEN r.status = 'compensating' THEN 'compensating' ELSE 'pending' END,
            node_id = NULL, run_at = now(),
            attempt = CASE WHEN coalesce(r.claim_seq, 0) >= $8::bigint AND (r.id, r.epoch) NOT IN (SELECT * FROM cut)
              THEN greatest(r.attempt - 1, 0) ELSE r.attempt END
          -- the ids as an array: each stray (usually none) is one primary-key probe
          WHERE r.id = ANY (ARRAY(
              SELECT s.id FROM ${S}.runs s
              WHERE $10::boolean AND EXISTS (SELECT 1 FROM prev WHERE process = $9::uuid)
                AND s.id = ANY (ARRAY(SELECT id FROM mine WHERE coalesce(claim_seq, 0) < $6::bigint AND id <> ALL ($3::uuid[])))
                AND s.status IN ('running', 'compensating') AND s.node_id = $1
              FOR NO KEY UPDATE SKIP LOCKED))
          RETURNING r.id, coalesce(r.claim_seq, 0) < $8::bigint AS interrupted
        ), free AS (
          -- the rows of the runs with progress to write ($7) that no other transaction holds; the ids
          -- as an array: one primary-key probe each, whatever the statistics say
          SELECT p.id FROM ${S}.runs p WHERE p.id = ANY (ARRAY(SELECT (v->>'id')::uuid FROM jsonb_array_elements($7::jsonb) v))
          FOR NO KEY UPDATE SKIP LOCKED
        ), progress AS (
          -- each value written while its claim owns the run
          UPDATE ${S}.runs r SET progress = v.value
          FROM jsonb_to_recordset($7::jsonb) AS v (id uuid, epoch integer, value jsonb)
          WHERE r.id = v.id AND v.id IN (SELECT id FROM free) AND r.epoch = v.epoch AND r.status IN ('running', 'compensating')
        )
        SELECT (SELECT fresh FROM hb) AS fresh, EXISTS (SELECT 1 FROM lease) AS leader,
          ARRAY(SELECT id FROM lost) AS lost, (SELECT count(*) FROM strays)::int AS strays,
          (SELECT count(*) FROM strays WHERE interrupted)::int AS interrupted,
          ARRAY(SELECT v.id FROM jsonb_to_recordset($7::jsonb) AS v (id uuid) WHERE v.id NOT IN (SELECT id FROM free)) AS "progressHeld",
          (SELECT max(claim_seq) FROM mine)::float8 AS "maxSeq",
          EXISTS (SELECT 1 FROM prev WHERE process IS DISTINCT FROM $9::uuid) AS "otherProcess",
          ARRAY(SELECT id FROM cut WHERE (id, epoch) IN (SELECT id, epoch FROM mine) AND id NOT IN (SELECT id FROM strays)) AS "cutShortHeld"`,
    recover: `
        WITH dead AS (
          DELETE FROM ${S}.nodes WHERE heartbeat_at < now() - $1 * interval '1 millisecond' RETURNING id
        ), orphans AS (
          -- a row another transaction holds is skipped, not waited for: the next pass recovers it
          -- (its node's row is gone by then). A new epoch: a compensating run stays compensating, so
          -- only the epoch refuses the dead node's late writes (its outcome, its progress)
          UPDATE ${S}.runs r SET status = CASE WHEN r.status = 'compensating' THEN 'compensating' ELSE 'pending' END,
            node_id = NULL, run_at = now(), epoch = r.epoch + 1
          WHERE r.id = ANY (ARRAY(
            SELECT o.id FROM ${S}.runs o
            WHERE (o.status = 'running' OR (o.status = 'compensating' AND o.node_id IS NOT NULL))
              AND (o.node_id IN (SELECT id FROM dead)
                   OR NOT EXISTS (SELECT 1 FROM ${S}.nodes n WHERE n.id = o.node_id))
            FOR NO KEY UPDATE OF o SKIP LOCKED))
          RETURNING r.id
        )
        SELECT (SELECT count(*) FROM dead)::int AS nodes, (SELECT count(*) FROM orphans)::int AS runs`,
    // with the maintenance lease it holds, if any: another node takes maintenance over at its next
    // beat; only this process's ($2) lease, and its row unless kept ($3: another process of the node
    // id beats under it)
    remove: `
        WITH lease AS (DELETE FROM ${S}.leases WHERE name = 'maintenance' AND holder = $1 AND process = $2)
        DELETE FROM ${S}.nodes WHERE id = $1 AND process = $2 AND NOT $3::boolean`,
    // who is in the cluster: its nodes (by id and start) and when an app last wrote its workflow
    // definitions (every app, with a worker or not, does at boot); it changes when one joins,
    // leaves or boots
    members: `
        SELECT coalesce((SELECT string_agg(id || '@' || started_at::text, ',' ORDER BY id) FROM ${S}.nodes), '')
          || '|' || coalesce((SELECT max(updated_at)::text FROM ${S}.workflow_definitions), '') AS members`,
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
      beat.firstClaim,
      beat.process,
      beat.giveBack,
      (beat.cutShort ?? []).map((r) => r.id),
      (beat.cutShort ?? []).map((r) => r.epoch),
    ]);
    return row;
  }

  /** Deletes nodes silent for `timeoutMs` and puts their (and any orphaned) running runs back to pending. */
  async recoverDead(q: Queryable, timeoutMs: number): Promise<{ nodes: number; runs: number }> {
    const [row] = await q.query<{ nodes: number; runs: number }>(this.sql.recover, [timeoutMs]);
    return row;
  }

  /** Who is in the cluster, as one string that changes when a node joins, leaves or an app boots (see the statement). */
  async members(q: Queryable): Promise<string> {
    const [row] = await q.query<{ members: string }>(this.sql.members);
    return row.members;
  }

  /** The first `limit` nodes by id; `alive` when heard from within `timeoutMs`. */
  list(q: Queryable, timeoutMs: number, limit: number): Promise<NodeRow[]> {
    return q.query<NodeRow>(this.sql.list, [timeoutMs, limit]);
  }

  /**
   * At a clean shutdown: gives up the maintenance lease if `process` holds it, and removes the
   * node's row if `process` beat last, unless `keepRow`.
   */
  async remove(q: Queryable, nodeId: string, process: string, keepRow = false): Promise<void> {
    await q.query(this.sql.remove, [nodeId, process, keepRow]);
  }
}
