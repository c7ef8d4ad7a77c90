/** SQL of new runs: their columns as a start sends them, their times, and a start claimed at once by its own node. */
import { nodeMayClaim, notPaused } from './sql';

/** The columns of a new run as a start sends them (a JSON recordset, see `recordset`). */
export const INSERT_COLUMNS = `id uuid, workflow text, key text, holds_key boolean, input jsonb, run_at timestamptz, delay_ms bigint,
  timeout_ms integer, parent_id uuid, parent_wait integer, runs_after_id uuid, trace jsonb, debounce_until timestamptz, debounce_ms bigint, priority integer,
  group_key text`;

/**
 * A new run's times, from the database's clock: due at `run_at`, else `delay_ms` from now; a
 * debounced run's limit `debounce_ms` from now (else `debounce_until`, e.g. 'infinity'), and never
 * due after its limit.
 */
export const DEBOUNCE_UNTIL = `CASE WHEN debounce_ms IS NULL THEN debounce_until ELSE now() + debounce_ms * interval '1 millisecond' END`;
export const RUN_AT = `least(coalesce(run_at, now() + coalesce(delay_ms, 0) * interval '1 millisecond'), ${DEBOUNCE_UNTIL})`;

/**
 * What an execution needs of a claimed run (`ClaimedRow`, without its recorded waits), on alias `r`;
 * `db_now_ms`: the database's clock as the claim returns, against which the node reads the run's
 * times (not `now()`: a claim's transaction may have begun long before, waiting for a lock).
 */
export const CLAIMED_COLUMNS = `r.flow_id, r.flow_name, r.name, r.deps, r.id, r.workflow, r.key, r.input, r.context, r.step, r.attempt,
        r.epoch, r.deadline_at, r.parent_id, r.trace, r.run_at, r.status, r.comp_step, r.error, r.priority,
        floor(extract(epoch FROM clock_timestamp()) * 1000)::float8 AS db_now_ms`;

/**
 * One new run, due now, inserted already claimed by the node that starts it ($3, with its first
 * lease epoch and attempt and the claim's number $5, as a claim would leave it) when that node may
 * claim it now: its heartbeat is fresh ($4: nodeTimeout, as the claim checks), no operator paused
 * the workflow, and no run of the workflow is due before it (a backlog keeps its order). Otherwise it is inserted pending and
 * the workers are woken ($2, the channel, unless empty). Returns the run as a claim does (its status says
 * whether it was claimed here); nothing when `onConflict` (the key's arbiter, for a keyed run)
 * found its key held, and nothing was written.
 */
export const insertClaimed = (S: string, onConflict: string): string => `
      WITH v AS MATERIALIZED (
        SELECT * FROM jsonb_to_recordset($1::jsonb) AS v(${INSERT_COLUMNS})
      ), here AS MATERIALIZED (
        SELECT EXISTS (${nodeMayClaim(S, '$3', '$4')}) AND ${notPaused(S, 'v.workflow')}
          AND NOT EXISTS (SELECT 1 FROM ${S}.runs p WHERE p.status = 'pending' AND p.workflow = v.workflow AND p.run_at <= now()) AS ok
        FROM v
      ), ins AS (
        INSERT INTO ${S}.runs AS r (id, workflow, key, holds_key, input, run_at, timeout_ms, trace, priority,
          status, node_id, epoch, attempt, started_at, deadline_at, claim_seq)
        SELECT v.id, v.workflow, v.key, v.holds_key, v.input, now(), v.timeout_ms, v.trace, coalesce(v.priority, 0),
          CASE WHEN here.ok THEN 'running' ELSE 'pending' END, CASE WHEN here.ok THEN $3 END,
          CASE WHEN here.ok THEN 1 ELSE 0 END, CASE WHEN here.ok THEN 1 ELSE 0 END,
          CASE WHEN here.ok THEN now() END, CASE WHEN here.ok THEN now() + v.timeout_ms * interval '1 millisecond' END,
          CASE WHEN here.ok THEN $5::bigint END
        FROM v CROSS JOIN here
        ${onConflict}
        RETURNING ${CLAIMED_COLUMNS}
      ), note AS MATERIALIZED (
        SELECT pg_notify($2, '') FROM ins WHERE ins.status = 'pending' AND $2 <> ''
      )
      -- every row of ins is read (a filter here could leave note unread, and nobody woken)
      SELECT ins.* FROM ins LEFT JOIN note ON true`;
