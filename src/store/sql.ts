/** SQL fragments shared by the statements of several tables. */

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
export const indexedWorkflows = (table: string, column: 'key' | 'workflow'): string => `ARRAY(
  WITH RECURSIVE w AS (
    (SELECT workflow FROM ${table} WHERE ${column} IS NOT NULL ORDER BY workflow LIMIT 1)
    UNION ALL
    SELECT (SELECT t.workflow FROM ${table} t WHERE t.${column} IS NOT NULL AND t.workflow > w.workflow ORDER BY t.workflow LIMIT 1)
    FROM w WHERE w.workflow IS NOT NULL
  ) SELECT workflow FROM w WHERE workflow IS NOT NULL)`;
