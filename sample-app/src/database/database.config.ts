import { Logger } from '@nestjs/common';
import { join } from 'node:path';
import { EmbeddedPostgresRunner } from './embedded-postgres.runner';
import { StartupRefused } from '../startup-refused';

export interface Database {
  url: string;
  /** Stops the embedded PostgreSQL, if this app started one. */
  stop(): Promise<void>;
}

export const DEFAULT_EMBEDDED_PORT = 54329;

/**
 * `DATABASE_URL` when set; otherwise an embedded PostgreSQL whose data lives in
 * `sample-app/.pgdata` and survives restarts.
 */
export async function openDatabase(): Promise<Database> {
  const logger = new Logger('Database');
  const url = process.env.DATABASE_URL;
  if (url) {
    logger.log('Using DATABASE_URL');
    return { url, stop: async () => undefined };
  }
  const port = Number(process.env.PGPORT_EMBEDDED ?? DEFAULT_EMBEDDED_PORT);
  if (!Number.isInteger(port) || port <= 0 || port > 65535) {
    throw new StartupRefused(`PGPORT_EMBEDDED must be a port number, got "${process.env.PGPORT_EMBEDDED}"`);
  }
  // dist/database/ -> sample-app/.pgdata
  const runner = new EmbeddedPostgresRunner({ dir: join(__dirname, '..', '..', '.pgdata'), port });
  await runner.start();
  return { url: runner.url, stop: () => runner.stop() };
}
