/**
 * A connection lost in the middle of one of the module's own transactions fails that transaction
 * and is dropped from the pool; it does not end the process (pg reports the loss as an `error`
 * event of the connection, which nothing listened to while the pool lent it out).
 */
import { Pool } from 'pg';
import { Db } from '../../src/store/db';
import { databaseUrl, sql, waitFor } from '../support';

it('a connection terminated between two statements of a transaction fails it, is not given back to the pool, and the pool goes on', async () => {
  const pool = new Pool({ connectionString: databaseUrl(), max: 2 });
  const db = new Db(pool, false);
  const uncaught: unknown[] = [];
  const onUncaught = (err: unknown) => uncaught.push(err);
  process.on('uncaughtException', onUncaught);
  try {
    let pid = 0;
    const failed = db.tx(async (q) => {
      [{ pid }] = await q.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      await sql('SELECT pg_terminate_backend($1)', [pid]);
      // the server ended the backend; the next statement of the transaction is sent after that
      await waitFor(async () => (await sql('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [pid])).length === 0, { message: 'the backend is gone' });
      await q.query('SELECT 1');
    });
    await expect(failed).rejects.toThrow();
    expect(uncaught).toEqual([]);
    // the lost connection was dropped: the pool's next transaction works on a new one
    const [{ other }] = await db.tx((q) => q.query<{ other: number }>('SELECT pg_backend_pid() AS other'));
    expect(other).not.toBe(pid);
    expect(pool.totalCount).toBe(1);
  } finally {
    process.removeListener('uncaughtException', onUncaught);
    await pool.end();
  }
});
