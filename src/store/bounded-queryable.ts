import type { QueryResultRow } from 'pg';
import type { Db, Queryable } from './db';

/** Statements and transactions, sent as `Db` sends them. */
export type Statements = Pick<Db, 'query' | 'tx'>;

/** Sets the statement timeout ($1, e.g. `'500ms'`) of the transaction it runs in, and of nothing after it. */
const LOCAL_TIMEOUT = `SELECT set_config('statement_timeout', $1, true)`;

/**
 * `db` with every statement bounded by a statement timeout of `timeoutMs` on the server: a
 * transaction's statements after it sets the timeout locally (the pooled connection keeps its own
 * settings), a statement alone in a transaction of its own that does. A statement that waits for a
 * lock, however long another transaction holds it, fails instead.
 */
export function bounded(db: Db, timeoutMs: number): Statements {
  const tx: Db['tx'] = (fn) =>
    db.tx(async (q) => {
      await q.query(LOCAL_TIMEOUT, [`${timeoutMs}ms`]);
      return fn(q);
    });
  return { query: (text, values) => tx((q) => q.query(text, values)), tx };
}

/**
 * `q`, one connection of a node's own that is sent one statement at a time, with each statement
 * bounded as {@link bounded} bounds a pool's: in a transaction of its own that sets the statement
 * timeout locally (behind a transaction pooler a session setting would not stay with the
 * connection). A transaction the statement's failure left open is rolled back; one whose connection
 * was lost goes with it.
 */
export function boundedConnection(q: Queryable, timeoutMs: number): Queryable {
  return {
    async query<R extends QueryResultRow>(text: string, values?: unknown[]): Promise<R[]> {
      await q.query('BEGIN');
      try {
        await q.query(LOCAL_TIMEOUT, [`${timeoutMs}ms`]);
        const rows = await q.query<R>(text, values);
        await q.query('COMMIT');
        return rows;
      } catch (err) {
        await q.query('ROLLBACK').catch(() => undefined);
        throw err;
      }
    },
  };
}
