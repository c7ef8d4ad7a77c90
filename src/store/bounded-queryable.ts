import type { Db, Queryable } from './db';

/** Sets a statement timeout of `timeoutMs` for the rest of the transaction `q` is in. */
const boundTx = (q: Queryable, timeoutMs: number) => q.query(`SELECT set_config('statement_timeout', $1, true)`, [`${timeoutMs}ms`]);

/**
 * `db` with every statement bounded by a statement timeout of `timeoutMs` on the server (each in a
 * transaction of its own that sets it locally, so the pooled connection keeps its own settings):
 * a statement that waits for a lock, however long another transaction holds it, fails instead.
 */
export function boundedQueryable(db: Db, timeoutMs: number): Queryable {
  return { query: (text, values) => boundedTx(db, timeoutMs)((q) => q.query(text, values)) };
}

/**
 * Transactions on `db` (as `db.tx`) whose every statement is bounded by a statement timeout of
 * `timeoutMs` (set locally: the pooled connection keeps its own settings).
 */
export function boundedTx(db: Db, timeoutMs: number): <T>(fn: (q: Queryable) => Promise<T>) => Promise<T> {
  return (fn) =>
    db.tx(async (q) => {
      await boundTx(q, timeoutMs);
      return fn(q);
    });
}
