import type { Db, Queryable } from './db';

/**
 * `db` with every statement bounded by a statement timeout of `timeoutMs` on the server (each in a
 * transaction of its own that sets it locally, so the pooled connection keeps its own settings):
 * a statement that waits for a lock, however long another transaction holds it, fails instead.
 */
export function boundedQueryable(db: Db, timeoutMs: number): Queryable {
  return {
    query: (text, values) =>
      db.tx(async (q) => {
        await q.query(`SELECT set_config('statement_timeout', $1, true)`, [`${timeoutMs}ms`]);
        return q.query(text, values);
      }),
  };
}
