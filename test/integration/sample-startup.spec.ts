/**
 * The sample app's refusals to start (a data folder another running app holds, a bad
 * PGPORT_EMBEDDED): a `StartupRefused` whose message main.ts prints alone, without a stack.
 */
import { spawn, type ChildProcess } from 'child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import * as path from 'path';
import { openDatabase } from '../../sample-app/src/database/database.config';
import { EmbeddedPostgresRunner } from '../../sample-app/src/database/embedded-postgres.runner';
import { StartupRefused, startupFailure } from '../../sample-app/src/startup-refused';

describe('sample app: refusing to start', () => {
  let dir: string;
  let holder: ChildProcess | undefined;
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'sample-pgdata-'));
  });
  afterEach(() => {
    holder?.kill();
    holder = undefined;
    rmSync(dir, { recursive: true, force: true });
  });

  it('a data folder held by the PostgreSQL of another running app: the message says what to do, and is printed without a stack', async () => {
    // a "postgres" process whose parent is a live Node process (this one), named in the lock file
    holder = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60_000)', 'postgres'], { stdio: 'ignore' });
    await new Promise((resolve) => holder!.once('spawn', resolve));
    writeFileSync(path.join(dir, 'PG_VERSION'), '17\n');
    writeFileSync(path.join(dir, 'postmaster.pid'), `${holder.pid}\n${dir}\n`);
    const error = await new EmbeddedPostgresRunner({ dir, port: 54399 }).start().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StartupRefused);
    const printed = startupFailure(error);
    expect(printed).toBe(
      `${dir} is in use by PostgreSQL pid ${holder.pid}, started by another running app (pid ${process.pid}). ` +
        'Stop that app, or share its database: DATABASE_URL=postgres://postgres:postgres@127.0.0.1:54399/durable_sample',
    );
    expect(printed).not.toMatch(/\n\s+at /);
  });

  it('a PGPORT_EMBEDDED that is not a port is refused the same way', async () => {
    const saved = { url: process.env.DATABASE_URL, port: process.env.PGPORT_EMBEDDED };
    process.env.DATABASE_URL = '';
    process.env.PGPORT_EMBEDDED = 'nope';
    try {
      const error = await openDatabase().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(StartupRefused);
      expect(startupFailure(error)).toBe('PGPORT_EMBEDDED must be a port number, got "nope"');
    } finally {
      const restore = (name: string, value: string | undefined) => (value === undefined ? delete process.env[name] : (process.env[name] = value));
      restore('DATABASE_URL', saved.url);
      restore('PGPORT_EMBEDDED', saved.port);
    }
  });

  it('any other failure is printed with its stack', () => {
    const error = new Error('the server exited (1)');
    expect(startupFailure(error)).toBe(error.stack);
    expect(startupFailure('text')).toBe('text');
  });
});
