import type { Queryable } from './db';

/** The calls under way on each caller's transaction (by its owner, see `managerQueryable`), the last one's end. */
const turns = new WeakMap<object, Promise<unknown>>();

/**
 * Runs `fn` when the calls made before it on the same caller's transaction (`q`, one of
 * `managerQueryable`'s) have ended: calls made at once on one transaction (a `Promise.all` of
 * starts) share one connection, and one's savepoint would otherwise take in the other's statements
 * (its release or rollback theirs too). A `q` of the module's own runs `fn` at once.
 */
export function inTurn<T>(q: Queryable, fn: () => Promise<T>): Promise<T> {
  const owner = (q as { owner?: object }).owner;
  if (owner === undefined) return fn();
  const mine = (turns.get(owner) ?? Promise.resolve()).then(fn);
  turns.set(
    owner,
    mine.catch(() => undefined),
  );
  return mine;
}
