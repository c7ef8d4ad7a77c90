import { Db, type Queryable } from '../../src/store/db';

/**
 * The most values any one statement of the module returned while `fn` ran, in a transaction or
 * not: its rows, or the elements of an array in one of its rows (a run's child ids), whichever is
 * more. Every statement of the module goes through `Db.query` or a `Db.tx` transaction.
 */
export async function mostValuesRead(fn: () => Promise<unknown>): Promise<number> {
  let most = 0;
  const seen = (rows: Record<string, unknown>[]) => {
    const inRows = rows.map((r) => Math.max(0, ...Object.values(r).map((v) => (Array.isArray(v) ? v.length : 0))));
    most = Math.max(most, rows.length, ...inRows);
    return rows;
  };
  const query = Db.prototype.query;
  const tx = Db.prototype.tx;
  const onQuery = jest.spyOn(Db.prototype, 'query').mockImplementation(async function (this: Db, ...args: Parameters<Db['query']>) {
    return seen(await query.apply(this, args));
  } as Db['query']);
  const onTx = jest.spyOn(Db.prototype, 'tx').mockImplementation(function (this: Db, work: (q: Queryable) => Promise<unknown>) {
    return tx.call(this, (q) => work({ query: async (...args: Parameters<Queryable['query']>) => seen(await q.query(...args)) } as Queryable));
  } as Db['tx']);
  try {
    await fn();
  } finally {
    onQuery.mockRestore();
    onTx.mockRestore();
  }
  return most;
}
