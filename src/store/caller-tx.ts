import { inSavepoint, type Db, type Queryable } from './db';

/**
 * A transaction a caller opened and ends, lent to a service so that what the service writes commits
 * or rolls back with the caller's own writes (the dashboard: an action and its activity record).
 * `q` sends the service's statements; `afterCommit` keeps what must happen only once they
 * committed (telemetry counts, in-process wake-ups). NOTIFYs sent on `q` are delivered by
 * PostgreSQL at the commit. Made by {@link inCallerTx}; internal, not part of the public API.
 */
export interface CallerTx {
  readonly q: Queryable;
  /** Calls `fn` once the transaction committed; never when it rolled back. */
  afterCommit(fn: () => void): void;
}

/**
 * Runs `fn` in a transaction of `db` of its own (READ COMMITTED, as the services' own transactions
 * run under PostgreSQL's default: each statement sees what committed before it), lent to the
 * services as a {@link CallerTx}; once it committed, calls what they left for after the commit, in
 * order. A failure of `fn`, or of the commit, rolls everything back and calls none of it.
 */
export async function inCallerTx<T>(db: Db, fn: (tx: CallerTx) => Promise<T>): Promise<T> {
  const committed: (() => void)[] = [];
  const out = await db.tx(async (q) => {
    await q.query('SET TRANSACTION ISOLATION LEVEL READ COMMITTED');
    return fn({ q, afterCommit: (f) => committed.push(f) });
  });
  for (const f of committed) f();
  return out;
}

/**
 * Runs `fn` in a savepoint of the caller's transaction `tx` (a failure undoes only what `fn` wrote,
 * and the caller's transaction stays usable: it may be tried again), else in a transaction of
 * `db`'s own.
 */
export function inTxOrOwn<T>(db: Pick<Db, 'tx'>, tx: CallerTx | undefined, fn: (q: Queryable) => Promise<T>): Promise<T> {
  return tx ? inSavepoint(tx.q, fn) : db.tx(fn);
}

/**
 * Sends `statement` (a single statement, atomic on its own) in a savepoint of the caller's
 * transaction `tx` (a failure undoes only what it wrote, and the caller's transaction stays usable:
 * it may be tried again), else alone on `db`, committed as it returns: no transaction of its own is
 * opened for it, as {@link inTxOrOwn} would.
 */
export function inTxOrAlone<T>(db: Queryable, tx: CallerTx | undefined, statement: (q: Queryable) => Promise<T>): Promise<T> {
  return tx ? inSavepoint(tx.q, statement) : statement(db);
}

/** Calls `fn` once what was just written committed: at once outside a caller's transaction, else when `tx` commits. */
export function onCommit(tx: CallerTx | undefined, fn: () => void): void {
  if (tx) tx.afterCommit(fn);
  else fn();
}
