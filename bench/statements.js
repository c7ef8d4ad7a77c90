'use strict';
// Where the one-step drain's round trips go, statement by statement (standalone; `npm run build`
// at the root first):
//
//   node bench/statements.js          # or: npm run statements -w bench
//   BENCH_STATEMENTS_N=200000 node bench/statements.js
//
// Enqueues N one-step runs (startMany, batches of 5,000), ANALYZEs, starts a worker (concurrency
// BENCH_STATEMENTS_CONCURRENCY, default 500) and drains them, timing every statement the module
// sends through its pool: per statement name, how many were sent, the runs per statement and the
// mean round trip. Uses DATABASE_URL,
// else the local postgres://postgres@127.0.0.1:5432/test; works in schema `bench_statements`
// (dropped first).
const { withClient } = require('./lib/db');
const { URL, oneStepWorkflow, bootDurable } = require('./lib/standalone');

const SCHEMA = 'bench_statements';
const N = Number(process.env.BENCH_STATEMENTS_N || 100000);
const CONCURRENCY = Number(process.env.BENCH_STATEMENTS_CONCURRENCY || 500);
const { Db } = require('../dist/src/store/db');

let done = 0;
const BenchStatements = oneStepWorkflow('bench_statements', undefined, () => done++);

/** Per statement name (or the first words of an unnamed one): count, rows, milliseconds. */
const stats = new Map();
let timing = false;
const query = Db.prototype.query;
Db.prototype.query = async function timed(text, values, name) {
  const t0 = process.hrtime.bigint();
  const rows = await query.call(this, text, values, name);
  if (timing) {
    const key = name || text.trim().replace(/\s+/g, ' ').slice(0, 40);
    const s = stats.get(key) || { n: 0, rows: 0, ms: 0 };
    s.n++;
    s.rows += rows.length;
    s.ms += Number(process.hrtime.bigint() - t0) / 1e6;
    stats.set(key, s);
  }
  return rows;
};

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

(async () => {
  await withClient(URL, (c) => c.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`));
  const boot = (worker) =>
    bootDurable({ schema: SCHEMA, worker: worker ? { concurrency: CONCURRENCY, pollInterval: '1s' } : false, migrationsRun: !worker }, [BenchStatements]);
  const { app: producer, durable } = await boot(false);
  for (let left = N; left > 0; left -= 5000)
    await durable.startMany(
      BenchStatements,
      Array.from({ length: Math.min(5000, left) }, (_, i) => ({ input: { i } })),
    );
  await withClient(URL, (c) => c.query(`ANALYZE ${SCHEMA}.runs`));
  timing = true;
  const t0 = Date.now();
  const { app: worker } = await boot(true);
  while (done < N) await sleep(5);
  const ms = Date.now() - t0;
  timing = false;
  console.log(`drained ${N.toLocaleString('en-US')} one-step runs in ${ms} ms: ${Math.round((N / ms) * 1000).toLocaleString('en-US')} runs/s`);
  console.log('| statement | sent | rows per statement | mean round trip, ms | total, ms |\n|---|---|---|---|---|');
  for (const [key, s] of [...stats].sort((a, b) => b[1].ms - a[1].ms)) {
    console.log(`| ${key} | ${s.n} | ${(s.rows / s.n).toFixed(1)} | ${(s.ms / s.n).toFixed(2)} | ${s.ms.toFixed(0)} |`);
  }
  await worker.close();
  await producer.close();
})().catch((err) => {
  console.error(err);
  process.exit(1);
});
