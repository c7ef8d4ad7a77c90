import type { Pool, PoolClient, QueryResultRow } from 'pg';
import type { EntityManager } from 'typeorm';
import { DurableValidationError } from '../errors';
import { problem } from '../domain/validation';

/** Something that runs one parameterised statement and returns its rows. */
export interface Queryable {
  query<R extends QueryResultRow = QueryResultRow>(text: string, values?: unknown[], name?: string): Promise<R[]>;
}

/**
 * The module's access to Postgres: the DataSource's own `pg` pool for the hot path (no ORM
 * hydration), or a caller's transaction when a `manager` is given.
 */
export class Db implements Queryable {
  constructor(
    readonly pool: Pool,
    /** Use named (prepared) statements for the hot path. */
    private readonly prepare = true,
    /**
     * Client-side bound of every statement, in ms (undefined: none): a statement whose answer never
     * comes (a connection that died without a word) fails instead of hanging its caller for good;
     * the pool then drops that connection.
     */
    private readonly timeoutMs?: number,
    /**
     * What pg's error of a connection not had within the pool's `connectionTimeoutMillis` is thrown
     * as: a new one the database did not answer, or (`pool`) a wait for one of the pool's, every
     * one busy (undefined: pg's own errors, as they are).
     */
    private readonly connectTimeout?: (pool: boolean) => Error,
  ) {}

  async query<R extends QueryResultRow = QueryResultRow>(text: string, values?: unknown[], name?: string): Promise<R[]> {
    const res = await this.pool
      .query<R>({ text, values, name: this.prepare ? name : undefined, query_timeout: this.timeoutMs } as never)
      .catch((err: unknown) => this.fail(err));
    return res.rows;
  }

  /**
   * Runs `fn` on one pooled connection inside BEGIN/COMMIT (ROLLBACK on error). A connection lost
   * meanwhile fails the statement out then, or the next one, and is not given back to the pool:
   * pg reports the loss as an `error` event of the connection, which the pool does not listen to
   * while the connection is lent, and which would otherwise end the process.
   */
  async tx<T>(fn: (q: Queryable) => Promise<T>): Promise<T> {
    const client = await this.pool.connect().catch((err: unknown) => this.fail(err));
    let lost: Error | undefined;
    const onLost = (err: Error) => (lost = err);
    client.on('error', onLost);
    const q = clientQueryable(client, this.timeoutMs);
    let broken: unknown;
    try {
      await q.query('BEGIN');
      const out = await fn(q);
      await q.query('COMMIT');
      return out;
    } catch (err) {
      broken = isReadTimeout(err) ? err : lost;
      if (!broken) await q.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      client.removeListener('error', onLost);
      // a connection lost, or whose statement timed out on this side, is not given back to the pool
      client.release((broken ?? lost) as Error | undefined);
    }
  }

  /** Throws `err`, or what a connect timeout is thrown as (see the constructor's `connectTimeout`). */
  private fail(err: unknown): never {
    if (!this.connectTimeout) throw err;
    if (isConnectTimeout(err)) throw this.connectTimeout(false);
    throw isPoolWaitTimeout(err) ? this.connectTimeout(true) : err;
  }
}

/** How many savepoints {@link inSavepoint} has made (each one's name is its own). */
let savepoints = 0;

/**
 * Runs `fn` inside a savepoint of the transaction `q` is in (a caller's): when it throws, what it
 * wrote is undone and the transaction stays usable.
 */
export async function inSavepoint<T>(q: Queryable, fn: (q: Queryable) => Promise<T>): Promise<T> {
  // a name of its own: calls made at once on one transaction do not release or roll back each other's
  const name = `durable_call_${++savepoints}`;
  await q.query(`SAVEPOINT ${name}`);
  try {
    const out = await fn(q);
    await q.query(`RELEASE SAVEPOINT ${name}`);
    return out;
  } catch (err) {
    // the call's own error, even when the transaction cannot be rolled back to the savepoint
    await q
      .query(`ROLLBACK TO SAVEPOINT ${name}`)
      .then(() => q.query(`RELEASE SAVEPOINT ${name}`))
      .catch(() => undefined);
    throw err;
  }
}

/** Postgres' SQLSTATE for a table that does not exist (a schema not migrated this far). */
export const UNDEFINED_TABLE = '42P01';

/** The SQLSTATE of an error Postgres reported (undefined for any other error). */
export function sqlState(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null | undefined)?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) && (err as { severity?: unknown }).severity !== undefined ? code : undefined;
}

/** A pg client as a {@link Queryable}; `timeoutMs`: the client-side bound of each statement (see {@link Db}). */
export function clientQueryable(client: PoolClient | { query: PoolClient['query'] }, timeoutMs?: number): Queryable {
  return {
    async query<R extends QueryResultRow>(text: string, values?: unknown[]) {
      const res = await (client as PoolClient).query<R>({ text, values, query_timeout: timeoutMs } as never);
      return res.rows;
    },
  };
}

/** True for the error of a statement whose answer did not come within its client-side bound. */
export function isReadTimeout(err: unknown): boolean {
  return err instanceof Error && err.message === 'Query read timeout';
}

/**
 * True for pg's error of a new connection the database did not answer within the pool's
 * `connectionTimeoutMillis` (not for a wait for a free connection of a full pool).
 */
export function isConnectTimeout(err: unknown): boolean {
  return err instanceof Error && err.message === 'Connection terminated due to connection timeout' && (err as { code?: unknown }).code === undefined;
}

/**
 * True for pg's error of a wait for a connection of a pool that had none free (and made none)
 * within its `connectionTimeoutMillis`.
 */
export function isPoolWaitTimeout(err: unknown): boolean {
  return err instanceof Error && err.message === 'timeout exceeded when trying to connect' && (err as { code?: unknown }).code === undefined;
}

/** Postgres' SQLSTATE for a statement sent on a transaction an earlier error aborted. */
const IN_FAILED_TRANSACTION = '25P02';

/**
 * A TypeORM EntityManager (inside a transaction) as a {@link Queryable}; `owner`, its query runner,
 * tells one caller's transaction from another (see `inTurn`). A transaction an earlier statement
 * aborted (Postgres refuses every statement until it rolls back) is a `DurableValidationError`
 * naming the manager, not the driver's error.
 */
export function managerQueryable(manager: EntityManager): Queryable & { owner: object } {
  return {
    owner: manager.queryRunner!,
    async query<R extends QueryResultRow>(text: string, values?: unknown[]) {
      const runner = manager.queryRunner!;
      const res = await runner.query(text, values as unknown[], true).catch((err: unknown) => {
        if (sqlState(err) !== IN_FAILED_TRANSACTION) throw err;
        const message = "manager's transaction is aborted (an earlier statement in it failed): roll it back, then start in a new transaction";
        throw new DurableValidationError(message, [problem('manager', undefined, 'isOpenTransaction', message)]);
      });
      return res.records as R[];
    },
  };
}

/** The open transaction of `manager` as a {@link Queryable}; undefined without a manager or outside a transaction. */
export function transactionOf(manager: EntityManager | undefined): Queryable | undefined {
  return manager?.queryRunner?.isTransactionActive ? managerQueryable(manager) : undefined;
}

/** Which database a connection is on: its name, and an id telling it from any other database of any server. */
export interface DatabaseIdentity {
  name: string;
  /** The name and the start time of its server. */
  id: string;
}

/** The {@link DatabaseIdentity} of the database `q` is on. */
export async function databaseOf(q: Queryable): Promise<DatabaseIdentity> {
  const [row] = await q.query<{ name: string; started: string }>(
    `SELECT current_database() AS name, extract(epoch FROM pg_postmaster_start_time())::text AS started`,
  );
  return { name: row.name, id: `${row.name} ${row.started}` };
}

/**
 * Runs `attempt` (a transaction of its own) again, up to `times` in all, while PostgreSQL ends it
 * with a deadlock (40P01): the transaction was rolled back, and is decided again from the start.
 */
export async function retryDeadlocks<T>(attempt: () => Promise<T>, times = 5): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await attempt();
    } catch (err) {
      if ((err as { code?: unknown })?.code !== '40P01' || i >= times) throw err;
    }
  }
}
