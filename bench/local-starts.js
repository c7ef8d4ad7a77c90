'use strict';
// Starts that are also executed, made on the worker's own node or on another node (standalone;
// `npm run build` at the root first):
//
//   node bench/local-starts.js    # or: npm run local-starts -w bench
//   BENCH_LOCAL_N=3000 BENCH_LOCAL_ROUNDS=3 node bench/local-starts.js
//
// One worker node (concurrency BENCH_CONCURRENCY, default 10) runs a one-step no-op workflow; a
// second node without a worker shares its schema. From 1 and from 16 concurrent callers, starts are
// made on the worker's node (a start due now while the node has a free slot and its start batcher is
// idle is inserted already claimed there and runs at once) and on the other node (inserted pending,
// woken by NOTIFY, claimed by the worker), taking turns in chunks (lib/turns.js). Each figure is
// starts/s while the worker executes them, median of the rounds with min–max; every run started is
// awaited before the next round. Uses DATABASE_URL, else the local postgres://postgres@127.0.0.1:5432/test;
// works in its own schema (`bench_local`, dropped first).
const { withClient } = require('./lib/db');
const { URL, oneStepWorkflow, bootDurable } = require('./lib/standalone');
const { round, median, fmt } = require('./lib/turns');
const { until } = require('./lib/util');

const SCHEMA = 'bench_local';
const N = Number(process.env.BENCH_LOCAL_N || 3000);
const ROUNDS = Number(process.env.BENCH_LOCAL_ROUNDS || 3);
const CHUNKS = Number(process.env.BENCH_LOCAL_CHUNKS || 10);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY || 10);

let ran = 0;
const Noop = oneStepWorkflow('bench_local_noop', {}, () => ran++);

const sql = (text, params) => withClient(URL, async (c) => (await c.query(text, params)).rows);

(async () => {
  await sql(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
  const worker = await bootDurable({ schema: SCHEMA, worker: { concurrency: CONCURRENCY } }, [Noop]);
  const other = await bootDurable({ schema: SCHEMA, worker: false, migrationsRun: false }, [Noop]);
  const [{ version }] = await sql('SELECT version()');
  console.log(`nestjs-durable starts on the worker's node — ${new Date().toISOString()} — ${version.split(' on ')[0]} — node ${process.version}`);
  let started = 0;
  const start = (node) => () => node.durable.start(Noop, {}).then(() => started++);
  const rows = [];
  for (const callers of [1, 16]) {
    const r = { here: [], elsewhere: [] };
    for (let i = 0; i < ROUNDS; i++) {
      const rates = await round(callers, { here: start(worker), elsewhere: start(other) }, N, CHUNKS);
      for (const [k, v] of Object.entries(rates)) r[k].push(v);
      await until(async () => ran === started, { every: 10, timeout: 60_000, what: 'every run started has run' });
      const [{ here }] = await sql(`SELECT count(*) FILTER (WHERE started_at = created_at)::int AS here FROM ${SCHEMA}.runs`);
      process.stdout.write(
        `  ${callers} caller(s), round ${i + 1}/${ROUNDS} done (${here.toLocaleString('en-US')} of ${started.toLocaleString('en-US')} runs so far claimed where started)\n`,
      );
    }
    rows.push([callers, r]);
  }
  console.log(`\nworker concurrency ${CONCURRENCY}; ${N.toLocaleString('en-US')} starts of each kind per round\n`);
  console.log("| callers | started on the worker's node, starts/s | started on another node, starts/s | ratio |");
  console.log('|---|---|---|---|');
  for (const [callers, r] of rows) console.log(`| ${callers} | ${fmt(r.here)} | ${fmt(r.elsewhere)} | ${(median(r.here) / median(r.elsewhere)).toFixed(2)}× |`);
  await other.app.close();
  await worker.app.close();
  await sql(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
})().catch((err) => {
  console.error(err);
  process.exit(1);
});
