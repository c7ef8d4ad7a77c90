import { ENDED } from './runs.sql';

/** A finished run that keeps its key until the key horizon (see `prune`). */
const KEEPS_KEY = (c: string) => `${c}.holds_key AND ${c}.finished_at >= now() - $3 * interval '1 millisecond'
              AND (${c}.workflow, ${c}.status) IN (SELECT * FROM unnest($4::text[], $5::text[]))`;
/** A child is kept while its parent is going (the parent's step reads it when it runs again). */
const CHILD_PRUNABLE = (S: string, c: string) => `(${c}.parent_id IS NULL OR NOT EXISTS (
              SELECT 1 FROM ${S}.runs p WHERE p.id = ${c}.parent_id AND p.finished_at IS NULL))`;
/** The tables the maintenance pass analyzes when their statistics are far behind. */
export const ANALYZED_TABLES = ['activity', 'runs'] as const;
/** One of {@link ANALYZED_TABLES}. */
export type AnalyzedTable = (typeof ANALYZED_TABLES)[number];

/**
 * The maintenance pass's statements on `runs` in schema `S`: the timeout sweep, retention (prune and
 * key tombstones) and the statistics check. Every one reads through an index what is due, never the
 * whole history.
 */
export function runsMaintenanceStatements(S: string): Record<string, string> {
  // the timeout sweep's: the compensation a timed-out run r begins with, -1 for none ($4: by workflow, by step)
  const C = `coalesce(CASE WHEN r.step > 0 THEN ($4::jsonb -> r.workflow ->> least(r.step, jsonb_array_length($4::jsonb -> r.workflow) - 1))::int END, -1)`;
  return {
    // Runs past their workflow timeout, read through two indexes (never the history): claimed before
    // (deadline_at set, runs_deadline) or never claimed (deadline run_at + timeout, runs_timeout_unclaimed_ready;
    // $3 is the shortest timeout of any workflow, a bound the index can use). A run past its first
    // step is timed out here only when its workflow is one of $1 (no compensations) or $4 (see C): it
    // then becomes compensating without a node, like a compensation waiting for its retry (so a paused
    // workflow's runs past their deadline are not read again at each pass); others are failed by the
    // worker that claims them. At most $2 of each kind. Rows another transaction holds are skipped.
    // $5: by workflow, its steps' names.
    timeouts: `
      WITH past_deadline AS (
        SELECT id FROM ${S}.runs
        WHERE status IN ('pending', 'waiting') AND deadline_at IS NOT NULL AND deadline_at < now()
          AND coalesce(deps_left, 0) = 0 AND (step = 0 OR workflow = ANY($1::text[]) OR $4::jsonb ? workflow)
        ORDER BY deadline_at LIMIT $2 FOR UPDATE SKIP LOCKED
      ), never_begun AS (
        SELECT id FROM ${S}.runs
        WHERE status IN ('pending', 'waiting') AND timeout_ms IS NOT NULL AND deadline_at IS NULL
          AND run_at < now() - $3 * interval '1 millisecond' AND run_at + timeout_ms * interval '1 millisecond' < now()
          AND coalesce(deps_left, 0) = 0 AND (step = 0 OR workflow = ANY($1::text[]) OR $4::jsonb ? workflow)
        ORDER BY run_at LIMIT $2 FOR UPDATE SKIP LOCKED
      )
      UPDATE ${S}.runs r SET status = CASE WHEN ${C} >= 0 THEN 'compensating' ELSE 'failed' END,
        finished_at = CASE WHEN ${C} < 0 THEN now() END,
        comp_step = CASE WHEN ${C} >= 0 THEN ${C} ELSE r.comp_step END,
        attempt = CASE WHEN ${C} >= 0 THEN 0 ELSE r.attempt END, -- the claim counts the first compensation's attempt
        run_at = CASE WHEN ${C} >= 0 THEN now() ELSE r.run_at END, node_id = NULL,
        wake_at = CASE WHEN ${C} >= 0 THEN NULL ELSE r.wake_at END,
        -- a run a worker had begun gets the error a worker gives it (the step it was at named, as $5 has it)
        error = CASE WHEN r.started_at IS NULL
          THEN jsonb_build_object('name', 'TimeoutError', 'code', 'timeout', 'message', 'the run timed out')
          ELSE jsonb_strip_nulls(jsonb_build_object('name', 'TimeoutError', 'code', 'timeout',
            'message', format('workflow "%s" timed out', r.workflow), 'step', $5::jsonb -> r.workflow -> r.step)) END
      WHERE r.id IN (SELECT id FROM past_deadline UNION ALL SELECT id FROM never_begun)
        AND r.status IN ('pending', 'waiting')
      RETURNING r.status, ${ENDED}`,
    // $1 runs' cutoff, $2 batch, $3 the key horizon (0: none), $4/$5 the (workflow, status) pairs
    // whose finished holder keeps its key: such a holder younger than the horizon is a tombstone
    // (below), not deleted
    prune: `
      WITH d AS (
        DELETE FROM ${S}.runs WHERE id IN (
          SELECT id FROM ${S}.runs c WHERE finished_at < now() - $1 * interval '1 millisecond'
            AND NOT (${KEEPS_KEY('c')})
            AND ${CHILD_PRUNABLE(S, 'c')}
          LIMIT $2)
        RETURNING id
      ), h AS (
        DELETE FROM ${S}.step_attempts WHERE run_id IN (SELECT id FROM d)
      ), k AS (
        -- hooks still owed to a pruned run (a lifecycle hook that kept failing) go with it
        DELETE FROM ${S}.flow_hooks WHERE run_id IN (SELECT id FROM d)
      ) SELECT count(*)::int AS n FROM d`,
    // the same holders, past the runs' cutoff and not yet tombstones: their history and payloads go,
    // the row (and its key) stays until the horizon
    tombstone: `
      WITH t AS (
        UPDATE ${S}.runs SET pruned_at = now(), input = NULL, context = '{}', result = NULL, results = '{}', error = NULL, trace = NULL,
          last_status = NULL
        WHERE id IN (
          SELECT id FROM ${S}.runs c WHERE finished_at < now() - $1 * interval '1 millisecond' AND pruned_at IS NULL
            AND ${KEEPS_KEY('c')}
            AND ${CHILD_PRUNABLE(S, 'c')}
          LIMIT $2)
        RETURNING id
      ), h AS (DELETE FROM ${S}.step_attempts WHERE run_id IN (SELECT id FROM t)),
      m AS (DELETE FROM ${S}.memos WHERE run_id IN (SELECT id FROM t)),
      e AS (DELETE FROM ${S}.events WHERE run_id IN (SELECT id FROM t)),
      w AS (DELETE FROM ${S}.waits WHERE run_id IN (SELECT id FROM t))
      SELECT count(*)::int AS n FROM t`,
    // the tables whose rows changed since their last ANALYZE (autovacuum's or anyone's) exceed a
    // tenth of the row count the planner believes (-1: never analyzed) — autovacuum's default threshold
    statsStale: `
      SELECT c.relname AS table
      FROM pg_class c LEFT JOIN pg_stat_all_tables s ON s.relid = c.oid
      WHERE c.oid = ANY(ARRAY(SELECT ('${S}.' || t)::regclass FROM unnest($2::text[]) t))
        AND coalesce(s.n_mod_since_analyze > greatest($1::float8, 0.1 * c.reltuples), false)
      ORDER BY c.relname = 'runs' DESC -- runs first: the claim's plan depends on it`,
    // SKIP_LOCKED: never waits behind a VACUUM or another node's ANALYZE of the table
    ...Object.fromEntries(ANALYZED_TABLES.map((t) => [`analyze_${t}`, `ANALYZE (SKIP_LOCKED) ${S}.${t}`])),
  };
}
