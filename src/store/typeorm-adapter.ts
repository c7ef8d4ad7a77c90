import type { Pool } from 'pg';
import { DataSource } from 'typeorm';

/**
 * Where the module meets TypeORM beyond its typed API, in one place so that what differs between
 * the supported majors (0.3 and 1.x) stays here. Today both keep the postgres driver's `pg` pool as
 * `driver.master` (also with `replication`, where it is the primary's pool); the rest the module
 * uses (`DataSource`, `createQueryRunner`, `queryRunner.query(text, values, true)`'s `records`,
 * `isTransactionActive`, `MigrationInterface`) is public and the same in both.
 */

/**
 * The module's own DataSource for `url` (no entities: the module reads and writes with SQL); `extra`
 * goes to the pg pool (e.g. session settings).
 */
export function createDataSource(url: string | undefined, extra?: Record<string, unknown>): DataSource {
  return new DataSource({ type: 'postgres', url, entities: [], extra });
}

/** The `pg` pool of an initialized postgres DataSource; a clear error when there is none. */
export function pgPoolOf(dataSource: DataSource): Pool {
  const pool = (dataSource.driver as unknown as { master?: Partial<Pool> } | undefined)?.master;
  if (!pool || typeof pool.connect !== 'function' || typeof pool.query !== 'function') {
    throw new Error(
      'nestjs-durable: the DataSource has no pg pool (driver.master); it must be an initialized postgres DataSource ' +
        'of TypeORM 0.3 or 1.x using the pg driver',
    );
  }
  return pool as Pool;
}

/**
 * The entity a TypeORM error says its DataSource does not know, or undefined: TypeORM calls an
 * unregistered entity class as a function (`Class constructor Article cannot be invoked without
 * 'new'`) or reports no metadata for it (`No metadata for "Article" was found`).
 */
export function unknownEntityOf(err: unknown): string | undefined {
  const message = err instanceof Error ? err.message : '';
  return (/^Class constructor (\S+) cannot be invoked without 'new'/.exec(message) ?? /^No metadata for "([^"]+)" was found/.exec(message))?.[1];
}
