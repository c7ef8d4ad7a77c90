import type { Db } from './db';

/** Statements and transactions, sent as `Db` sends them. */
export type Statements = Pick<Db, 'query' | 'tx'>;

/**
 * `db` with every statement bounded by a statement timeout of `timeoutMs` on the server: a
 * transaction's statements after it sets the timeout locally (the pooled connection keeps its own
 * settings), a statement alone in a transaction of its own that does. A statement that waits for a
 * lock, however long another transaction holds it, fails instead.
 */
export function bounded(db: Db, timeoutMs: number): Statements {
  const tx: Db['tx'] = (fn) =>
    db.tx(async (q) => {
      await q.query(`SELECT set_config('statement_timeout', $1, true)`, [`${timeoutMs}ms`]);
      return fn(q);
    });
  return { query: (text, values) => tx((q) => q.query(text, values)), tx };
}
