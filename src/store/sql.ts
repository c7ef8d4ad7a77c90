import type { RunStatus } from '../domain/run-info';

/** SQL fragments shared by the statements of several tables. */

/** `statuses` (the module's own constants) as SQL literals: `'a', 'b'`. */
export const statusLiterals = (statuses: readonly RunStatus[]): string => statuses.map((st) => `'${st}'`).join(', ');

/**
 * A run's workflow deadline, on the columns of `alias`: the one its first claim stored, else (never
 * claimed) `run_at` + its timeout; none for a flow node still waiting for its dependencies (its
 * timeout counts from when it becomes due). Null: no deadline.
 */
export const runDeadline = (alias: string): string =>
  `coalesce(${alias}.deadline_at, CASE WHEN coalesce(${alias}.deps_left, 0) = 0 THEN ${alias}.run_at + ${alias}.timeout_ms * interval '1 millisecond' END)`;

/**
 * A run `durable_flow_resolve` cancelled (its dependency failed, was cancelled or is gone), on
 * runs' columns (unqualified): the error and reason that function writes (DurableFlows1733040003000).
 */
export const CANCELLED_BY_FLOW = `(error ? 'reason' AND cancel_reason LIKE 'a dependency was %')`;

/**
 * A key's holder, as the `runs_key` index (workflow, key, (holds_key OR NULL)) answers it: its third
 * column is true for the holder only (migration DurableKeyIndex1733040005000). A plain `holds_key`
 * would read every run of the key.
 */
export const holdsKey = (alias: string): string => `(${alias}.holds_key OR NULL) IS TRUE`;

/**
 * The distinct `workflow` values of `table` where `column IS NOT NULL`, as an array expression read
 * from an index that leads with `workflow` under that predicate: one descent per workflow (a loose
 * index scan, which PostgreSQL before 18 does not do itself). With it, a filter on `key` alone uses
 * the (workflow, key, …) index as `workflow = ANY(…) AND key = $n` instead of reading every row.
 */
export const indexedWorkflows = (table: string, column: 'key' | 'workflow'): string => distinctWorkflows(table, (a) => `${a}.${column} IS NOT NULL`);

/**
 * The distinct `workflow` values of the rows of `table` that match `where` (a condition on an
 * alias), read as {@link indexedWorkflows} reads them, from an index that leads with `workflow`
 * under that condition.
 */
export const distinctWorkflows = (table: string, where: (alias: string) => string): string => distinctValues(table, 'workflow', where);

/**
 * `workflow` (an SQL expression, null for all) as an array, else every workflow of `table` with
 * `column` not null ({@link indexedWorkflows}): what a read of one workflow or of all of them
 * unnests, one workflow at a time through an index that leads with `workflow`.
 */
export const givenOrIndexedWorkflows = (workflow: string, table: string, column: 'key' | 'workflow'): string =>
  `CASE WHEN ${workflow}::text IS NULL THEN ${indexedWorkflows(table, column)} ELSE ARRAY[${workflow}::text] END`;

/**
 * The distinct values of `column` of the rows of `table` that match `where` (a condition on an
 * alias), in order, as an array expression: one descent per value of an index that leads with
 * `column` under that condition (a loose index scan, which PostgreSQL before 18 does not do itself).
 * With `page` (SQL expressions), only the first `limit` values after `after` (null: from the
 * first): the descents stop there.
 */
export const distinctValues = (table: string, column: string, where: (alias: string) => string, page?: { after: string; limit: string }): string => `ARRAY(
  WITH RECURSIVE w AS (
    (SELECT f.${column} AS v FROM ${table} f WHERE ${where('f')}${page ? ` AND (${page.after} IS NULL OR f.${column} > ${page.after})` : ''}
     ORDER BY f.${column} LIMIT 1)
    UNION ALL
    SELECT (SELECT t.${column} FROM ${table} t WHERE ${where('t')} AND t.${column} > w.v ORDER BY t.${column} LIMIT 1)
    FROM w WHERE w.v IS NOT NULL
  ) SELECT v FROM w WHERE v IS NOT NULL${page ? ` LIMIT ${page.limit}` : ''})`;

/**
 * The attempt that ended run `r`, as its row keeps it (`last_step`, `last_attempt`, `last_status`,
 * `last_started_at`, `last_finished_at`; set when `last_status` is): as the columns of a
 * `step_attempts` row. Its node is the run's (the node that held the run's lease wrote its end),
 * its error the run's when it failed.
 */
export const lastAttemptFields = (r: string): string => `${r}.last_step AS step, ${r}.last_attempt AS attempt, ${r}.last_status AS status,
  ${r}.last_started_at AS started_at, ${r}.last_finished_at AS finished_at,
  CASE WHEN ${r}.last_status = 'failed' THEN ${r}.error END AS error, ${r}.node_id AS node_id`;

/**
 * Share of `nodeTimeout` after its last successful heartbeat when a node fences itself: it stops
 * claiming and gives up its running steps before any other node may recover them.
 */
export const SELF_FENCE_SHARE = 0.75;

/**
 * The node `id` may claim runs: its own heartbeat is fresher than {@link SELF_FENCE_SHARE} of
 * `nodeTimeoutMs` (parameters of the statement). A node declared dead, or one fenced because it
 * cannot heartbeat, claims nothing.
 */
export const nodeMayClaim = (S: string, id: string, nodeTimeoutMs: string): string =>
  `SELECT 1 FROM ${S}.nodes WHERE id = ${id} AND heartbeat_at > now() - ${nodeTimeoutMs} * ${SELF_FENCE_SHARE} * interval '1 millisecond'`;

/** No operator paused the workflow `workflow` (an expression). */
export const notPaused = (S: string, workflow: string): string =>
  `NOT EXISTS (SELECT 1 FROM ${S}.workflow_controls wc WHERE wc.workflow = ${workflow} AND wc.paused)`;
