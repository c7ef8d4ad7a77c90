import { ENDED } from './runs.sql';
import { distinctValues, distinctWorkflows } from './sql';

/** A finished run that keeps its key until the key horizon (see `prune`). */
const KEEPS_KEY = (c: string) => `${c}.holds_key AND ${c}.finished_at >= now() - $3 * interval '1 millisecond'
              AND (${c}.workflow, ${c}.status) IN (SELECT * FROM unnest($4::text[], $5::text[]))`;
/**
 * A child is kept while its parent is going (the parent's step reads it when it runs again). Its
 * parent is looked up by id, once per run read (a scalar subquery: as NOT EXISTS under an OR, the
 * planner may hash the going runs instead, reading the whole table at every prune).
 */
const CHILD_PRUNABLE = (S: string, c: string) => `coalesce((
              SELECT p.finished_at IS NOT NULL FROM ${S}.runs p WHERE p.id = ${c}.parent_id), true)`;
/**
 * The runs whose ids `select` returns, as an array, not a join: each read once by primary key,
 * whatever the planner thinks `select` holds (guessing a full batch, it may hash them and read the
 * whole table).
 */
const byIds = (select: string) => `id = ANY(ARRAY(${select}))`;
/** A CTE of schema `S`: the flow hooks still owed to the runs deleted (CTE `d`; a lifecycle hook that kept failing) go with them. */
const hooksGo = (S: string) => `k AS (DELETE FROM ${S}.flow_hooks WHERE run_id IN (SELECT id FROM d))`;
/** The tables the maintenance pass analyzes when their statistics are far behind. */
export const ANALYZED_TABLES = ['activity', 'runs'] as const;
/** One of {@link ANALYZED_TABLES}. */
export type AnalyzedTable = (typeof ANALYZED_TABLES)[number];

/** A run of `runs` (alias `a`) not finished that a claim gave a deadline: `runs_deadline_workflow`'s rows. */
const CLAIMED_GOING = (a: string) => `${a}.status IN ('pending', 'waiting') AND ${a}.deadline_at IS NOT NULL`;
/**
 * A run of `runs` (alias `a`) never claimed (since its start or its retry) whose workflow has a
 * timeout, not a flow node waiting for its deps, at its first step (`first`: the rows of
 * `runs_timeout_unclaimed_first_step`) or past it (a retried run: `runs_timeout_retried`'s).
 */
const UNCLAIMED_TIMED = (a: string, first: boolean) =>
  `${a}.status IN ('pending', 'waiting') AND ${a}.timeout_ms IS NOT NULL AND ${a}.deadline_at IS NULL AND coalesce(${a}.deps_left, 0) = 0
  AND ${a}.step ${first ? '= 0' : '> 0'}`;

/**
 * The maintenance pass's statements on `runs` in schema `S`: the timeout sweep, retention (prune and
 * key tombstones) and the statistics check. Every one reads through an index what is due, never the
 * whole history.
 */
export function runsMaintenanceStatements(S: string): Record<string, string> {
  // the timeout sweep's: the compensation a timed-out run r begins with, -1 for none ($3: by workflow, by step)
  const C = `coalesce(CASE WHEN r.step > 0 THEN ($3::jsonb -> r.workflow ->> least(r.step, jsonb_array_length($3::jsonb -> r.workflow) - 1))::int END, -1)`;
  // the sweep times out a run past its first step only when its workflow is one of $1 (no
  // compensations) or $3 (see C); others are failed, and compensated, by the worker that claims them
  const timesOutAll = (a: string) => `(${a}.workflow = ANY($1::text[]) OR $3::jsonb ? ${a}.workflow)`;
  const mayTimeOut = (a: string) => `(${a}.step = 0 OR ${timesOutAll(a)})`;
  // the runs never claimed of timeout t.ms due longer ago than it, at their first step or past it
  const pastTimeout = (first: boolean, where = '') => `
            SELECT x.id, x.run_at FROM ${S}.runs x
            WHERE ${where} x.timeout_ms = t.ms AND ${UNCLAIMED_TIMED('x', first)} AND x.run_at < now() - t.ms * interval '1 millisecond'
            ORDER BY x.run_at LIMIT $2 FOR UPDATE SKIP LOCKED`;
  return {
    // Runs past their workflow timeout, never the history, nor a run the sweep may not time out:
    // claimed before (deadline_at set): per workflow, every run past its deadline of a workflow the
    // sweep may time out (one descent of runs_deadline_workflow), and of another workflow those at
    // their first step (one descent of runs_deadline_first_step: the runs past their first step a
    // pause holds are not read, and do not keep a later first-step run from being read); never
    // claimed, since its start or its retry (deadline run_at + timeout): at their first step, per
    // timeout (one descent of runs_timeout_unclaimed_first_step each), the runs due longer ago than
    // it; past their first step (retried runs), the same of each workflow the sweep may time out at
    // any step (runs_timeout_retried: one descent per such workflow and timeout; the retried runs
    // of another workflow are not read). A run past its first step becomes compensating without a
    // node when it has compensations to run (see C), like a compensation waiting for its retry (so
    // a paused workflow's runs past their deadline are not read again at each pass). At most $2 of
    // each kind. Rows another transaction holds are skipped. The error is the one a worker gives (its
    // message $5 with the workflow's name, the step the run is at named as $4 has it, by workflow).
    timeouts: `
      WITH past_deadline AS (
        SELECT id FROM ${S}.runs r WHERE r.id = ANY(ARRAY(
          SELECT d.id FROM unnest(${distinctWorkflows(`${S}.runs`, CLAIMED_GOING)}) AS w (workflow)
          CROSS JOIN LATERAL (
            (SELECT x.id, x.deadline_at FROM ${S}.runs x
            WHERE x.workflow = w.workflow AND ${CLAIMED_GOING('x')} AND x.deadline_at < now() AND ${timesOutAll('w')}
            ORDER BY x.deadline_at LIMIT $2)
            UNION ALL
            (SELECT x.id, x.deadline_at FROM ${S}.runs x
            WHERE x.workflow = w.workflow AND ${CLAIMED_GOING('x')} AND x.step = 0 AND x.deadline_at < now() AND NOT ${timesOutAll('w')}
            ORDER BY x.deadline_at LIMIT $2)
          ) d
          ORDER BY d.deadline_at LIMIT $2))
          AND ${CLAIMED_GOING('r')} AND r.deadline_at < now() AND coalesce(r.deps_left, 0) = 0 AND ${mayTimeOut('r')}
        FOR UPDATE SKIP LOCKED
      ), never_begun AS (
        SELECT d.id FROM (
          SELECT d.id, d.run_at FROM unnest(${distinctValues(`${S}.runs`, 'timeout_ms', (a) => UNCLAIMED_TIMED(a, true))}) AS t (ms)
          CROSS JOIN LATERAL (${pastTimeout(true)}) d
          UNION ALL
          SELECT d.id, d.run_at FROM unnest($1::text[] || ARRAY(SELECT jsonb_object_keys($3::jsonb))) AS wf (workflow)
          CROSS JOIN LATERAL unnest(${distinctValues(`${S}.runs`, 'timeout_ms', (a) => `${a}.workflow = wf.workflow AND ${UNCLAIMED_TIMED(a, false)}`)}) AS t (ms)
          CROSS JOIN LATERAL (${pastTimeout(false, 'x.workflow = wf.workflow AND')}) d
        ) d
        ORDER BY d.run_at LIMIT $2
      )
      UPDATE ${S}.runs r SET status = CASE WHEN ${C} >= 0 THEN 'compensating' ELSE 'failed' END,
        finished_at = CASE WHEN ${C} < 0 THEN now() END,
        comp_step = CASE WHEN ${C} >= 0 THEN ${C} ELSE r.comp_step END,
        attempt = CASE WHEN ${C} >= 0 THEN 0 ELSE r.attempt END, -- the claim counts the first compensation's attempt
        run_at = CASE WHEN ${C} >= 0 THEN now() ELSE r.run_at END, node_id = NULL,
        wake_at = CASE WHEN ${C} >= 0 THEN NULL ELSE r.wake_at END,
        error = jsonb_strip_nulls(jsonb_build_object('name', 'TimeoutError', 'code', 'timeout',
          'message', format($5::text, r.workflow), 'step', $4::jsonb -> r.workflow -> r.step))
      -- the ids as an array, not a join: each run is read once by primary key, whatever the planner
      -- thinks the CTEs hold (guessing a full batch, it hashed them and read every pending run)
      WHERE r.id = ANY(ARRAY(SELECT id FROM past_deadline UNION ALL SELECT id FROM never_begun))
        AND r.status IN ('pending', 'waiting')
      RETURNING r.status, ${ENDED}`,
    // $1 runs' cutoff, $2 batch, $3 the key horizon (0: none), $4/$5 the (workflow, status) pairs
    // whose finished holder keeps its key. The finished runs past the cutoff that are not key
    // tombstones (runs_finished_live), oldest first, $2 of them: a holder that keeps its key and is
    // younger than the horizon becomes a tombstone (its history and payloads go, the row and its
    // key stay until the horizon, see pruneTombstones), the others are deleted. Each run read is
    // pruned one way or the other, so a backlog of runs due is not read again by each statement (a
    // child whose parent is going is read and kept). A row another transaction holds is skipped (a
    // later pass prunes it): a pass never waits for it, however long that transaction stays open
    prune: `
      WITH due AS (
        SELECT id, (${KEEPS_KEY('c')}) IS TRUE AS keeps FROM ${S}.runs c
        WHERE finished_at < now() - $1 * interval '1 millisecond' AND pruned_at IS NULL AND ${CHILD_PRUNABLE(S, 'c')}
        ORDER BY finished_at LIMIT $2 FOR UPDATE SKIP LOCKED
      ), t AS (
        UPDATE ${S}.runs SET pruned_at = now(), input = NULL, context = '{}', result = NULL, results = '{}', error = NULL, trace = NULL,
          last_status = NULL
        WHERE ${byIds('SELECT id FROM due WHERE keeps')}
        RETURNING id
      ), d AS (
        DELETE FROM ${S}.runs WHERE ${byIds('SELECT id FROM due WHERE NOT keeps')} RETURNING id
      ), h AS (DELETE FROM ${S}.step_attempts WHERE run_id IN (SELECT id FROM due)),
      -- a deleted run's memos, events and waits go with it (foreign keys); a tombstone's here
      m AS (DELETE FROM ${S}.memos WHERE run_id IN (SELECT id FROM t)),
      e AS (DELETE FROM ${S}.events WHERE run_id IN (SELECT id FROM t)),
      w AS (DELETE FROM ${S}.waits WHERE run_id IN (SELECT id FROM t)),
      ${hooksGo(S)}
      SELECT (SELECT count(*) FROM t)::int + (SELECT count(*) FROM d)::int AS n`,
    // $1 runs' cutoff, $2 batch, $3 the key horizon (0: none): the key tombstones past the cutoff
    // whose key was released or whose horizon passed (runs_tombstones; the tombstones kept are not
    // read), deleted. A tombstone is kept until its horizon even if its workflow's reuse no longer
    // keeps its key. The two are read in turn, as the delete takes them: at most $2 rows are locked
    // in all. Rows another transaction holds are skipped, as above
    pruneTombstones: `
      WITH released AS (
        SELECT id FROM ${S}.runs c WHERE finished_at < now() - $1 * interval '1 millisecond' AND pruned_at IS NOT NULL
          AND NOT holds_key AND ${CHILD_PRUNABLE(S, 'c')}
        LIMIT $2 FOR UPDATE SKIP LOCKED
      ), past_horizon AS (
        SELECT id FROM ${S}.runs c WHERE finished_at < now() - $1 * interval '1 millisecond' AND pruned_at IS NOT NULL
          AND holds_key AND finished_at < now() - $3 * interval '1 millisecond' AND ${CHILD_PRUNABLE(S, 'c')}
        LIMIT $2 FOR UPDATE SKIP LOCKED
      ), d AS (
        DELETE FROM ${S}.runs WHERE ${byIds('SELECT id FROM (SELECT id FROM released UNION ALL SELECT id FROM past_horizon) x LIMIT $2')}
        RETURNING id
      ), h AS (DELETE FROM ${S}.step_attempts WHERE run_id IN (SELECT id FROM d)),
      ${hooksGo(S)}
      SELECT count(*)::int AS n FROM d`,
    // the tables whose rows changed since their last ANALYZE (autovacuum's or anyone's) exceed a
    // tenth of the row count the planner believes (-1: never analyzed) — autovacuum's default threshold.
    // The statistics function is called for these tables only: the pg_stat_all_tables view groups
    // every relation of the database before any filter applies, so reading it costs what the
    // database's table count costs
    statsStale: `
      SELECT c.relname AS table
      FROM pg_class c
      WHERE c.oid = ANY(ARRAY(SELECT ('${S}.' || t)::regclass FROM unnest($2::text[]) t))
        AND pg_stat_get_mod_since_analyze(c.oid) > greatest($1::float8, 0.1 * c.reltuples)
      ORDER BY c.relname = 'runs' DESC -- runs first: the claim's plan depends on it`,
    // SKIP_LOCKED: never waits behind a VACUUM or another node's ANALYZE of the table
    ...Object.fromEntries(ANALYZED_TABLES.map((t) => [`analyze_${t}`, `ANALYZE (SKIP_LOCKED) ${S}.${t}`])),
  };
}
