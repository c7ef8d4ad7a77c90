'use strict';
// The dashboard's pages over a big history: how long each page takes on the server with
// BENCH_DASHBOARD_RUNS (default 1,000,000) runs stored.
//
//   node bench/dashboard.js        (DATABASE_URL, else the local Postgres, else an embedded one)
//
// Seeds schema `bench_dashboard` with one INSERT … SELECT generate_series: 4 workflows, keys of 5
// runs each (the newest holds it), mostly completed with some failed and cancelled runs and 1,000
// pending ones; 100,000 re-adds in the activity log and a step attempt for each of the newest
// 100,000 runs; then VACUUM ANALYZE. A Nest app serves the dashboard (no worker), and each page is asked
// BENCH_DASHBOARD_REPS times (default 7): the figure is the median time from the request reaching
// the server to its response ending (a middleware of the app), so the client's side is not in it.
// Writes results/dashboard.md (BENCH_OUT elsewhere).
require('reflect-metadata');
const fs = require('fs');
const path = require('path');
const { resolveUrl, stopEmbedded, withClient, envFacts } = require('./lib/db');

const RUNS = Number(process.env.BENCH_DASHBOARD_RUNS || 1_000_000);
const REPS = Number(process.env.BENCH_DASHBOARD_REPS || 7);
const SCHEMA = 'bench_dashboard';
const WORKFLOWS = ['bench_dash_0', 'bench_dash_1', 'bench_dash_2', 'bench_dash_3'];
const KEYS = Math.max(4, Math.floor(RUNS / 20) * 4);
/** A key the pages look up, and its workflow. */
const KEY = 4242 % KEYS;
const log = (m) => console.log(`[${new Date().toISOString().slice(11, 19)}] ${m}`);

/** A one-step workflow class per name, decorated by hand. */
function defineWorkflows(lib) {
  return WORKFLOWS.map((name) => {
    const cls = class {
      async only(ctx) {
        return ctx.input;
      }
    };
    Object.defineProperty(cls, 'name', { value: name });
    const desc = Object.getOwnPropertyDescriptor(cls.prototype, 'only');
    const out = lib.Step()(cls.prototype, 'only', desc);
    if (out) Object.defineProperty(cls.prototype, 'only', out);
    lib.Workflow(name)(cls);
    return cls;
  });
}

// A UUIDv7-shaped id for run i: its time (ms) first, so ids sort as the runs were created.
const RUN_ID = (i) => `(lpad(to_hex((extract(epoch FROM now() - (${RUNS} - ${i}) * interval '2 seconds') * 1000)::bigint), 12, '0')
  || '7' || substr(md5(${i}::text), 1, 3) || '8' || substr(md5(${i}::text), 4, 15))::uuid`;

async function seed(url) {
  const S = `"${SCHEMA}"`;
  await withClient(url, async (c) => {
    log(`seeding ${RUNS.toLocaleString()} runs`);
    await c.query(`TRUNCATE ${S}.runs, ${S}.activity, ${S}.step_attempts CASCADE`);
    await c.query(`
      INSERT INTO ${S}.runs (id, workflow, key, holds_key, status, input, run_at, created_at, started_at, finished_at, step, attempt, result)
      SELECT ${RUN_ID('i')}, 'bench_dash_' || (i % 4), 'item:' || (i % ${KEYS}), i > ${RUNS - KEYS},
        CASE WHEN i > ${RUNS - 1000} THEN 'pending' WHEN i % 50 = 0 THEN 'failed' WHEN i % 97 = 0 THEN 'cancelled' ELSE 'completed' END,
        jsonb_build_object('i', i, 'title', 'item ' || i),
        CASE WHEN i > ${RUNS - 1000} THEN 'infinity'::timestamptz ELSE now() - (${RUNS} - i) * interval '2 seconds' END,
        now() - (${RUNS} - i) * interval '2 seconds',
        CASE WHEN i > ${RUNS - 1000} THEN NULL ELSE now() - (${RUNS} - i) * interval '2 seconds' END,
        CASE WHEN i > ${RUNS - 1000} THEN NULL ELSE now() - (${RUNS} - i) * interval '2 seconds' + interval '1 second' END,
        CASE WHEN i > ${RUNS - 1000} THEN 0 ELSE 1 END, 1, jsonb_build_object('ok', true)
      FROM generate_series(1, ${RUNS}) AS i`);
    log('seeding activity and step attempts');
    await c.query(`
      INSERT INTO ${S}.activity (kind, run_id, workflow, key, at, details)
      SELECT 'key_duplicate', ${RUN_ID('r')}, 'bench_dash_' || (r % 4), 'item:' || (r % ${KEYS}), now() - j * interval '1 second',
        jsonb_build_object('workflow', 'bench_dash_' || (r % 4), 'key', 'item:' || (r % ${KEYS}), 'outcome', 'useExisting',
          'inputChanged', j % 3 = 0, 'input', jsonb_build_object('i', r, 'title', 'changed ' || j))
      FROM generate_series(1, 100000) AS j, LATERAL (SELECT ${RUNS} - (j % ${Math.min(KEYS, 100000)}) AS r) x`);
    await c.query(`
      INSERT INTO ${S}.step_attempts (run_id, step, attempt, status, started_at, finished_at, node_id)
      SELECT ${RUN_ID('i')}, 0, 1, 'completed', now(), now(), 'bench' FROM generate_series(${Math.max(1, RUNS - 100000)}, ${RUNS - 1000}) AS i`);
    // as autovacuum leaves a table of this size: statistics, and a visibility map for index-only scans
    for (const table of ['runs', 'activity', 'step_attempts']) await c.query(`VACUUM ANALYZE ${S}.${table}`);
  });
}

async function main() {
  const url = await resolveUrl({ log });
  const lib = require(process.env.BENCH_OURS_LIB || 'nestjs-durable');
  const { DurableDashboardModule } = require('nestjs-durable/dashboard');
  const { Module } = require('@nestjs/common');
  const { NestFactory } = require('@nestjs/core');
  const workflows = defineWorkflows(lib);
  class BenchDashboardApp {}
  Module({
    imports: [lib.DurableModule.forRoot({ url, schema: SCHEMA, worker: false }), DurableDashboardModule.forRoot({ path: 'durable' })],
    providers: workflows,
  })(BenchDashboardApp);
  const app = await NestFactory.create(BenchDashboardApp, { logger: ['error'] });
  const times = new Map();
  app.use((req, res, next) => {
    const t0 = process.hrtime.bigint();
    res.on('finish', () => {
      const list = times.get(req.originalUrl) ?? [];
      list.push(Number(process.hrtime.bigint() - t0) / 1e6);
      times.set(req.originalUrl, list);
    });
    next();
  });
  await app.listen(0, '127.0.0.1');
  const base = (await app.getUrl()).replace('[::1]', '127.0.0.1');
  try {
    await seed(url);
    const durable = app.get(lib.DurableService);
    const flow = await durable.startFlow(
      durable
        .flow({ name: 'bench flow' })
        .add('a', 'bench_dash_0', 1)
        .add('b', 'bench_dash_1', 2, { deps: ['a'] }),
    );
    const [newest, oldest] = await withClient(url, async (c) => [
      (await c.query(`SELECT id FROM "${SCHEMA}".runs WHERE workflow = 'bench_dash_${KEY % 4}' AND key = 'item:${KEY}' AND holds_key`)).rows[0].id,
      (await c.query(`SELECT id FROM "${SCHEMA}".runs ORDER BY id LIMIT 1`)).rows[0].id,
    ]);
    const pages = [
      '/durable/',
      '/durable/runs',
      `/durable/runs?q=${encodeURIComponent(`key:item:${KEY}`)}`,
      `/durable/runs?q=${encodeURIComponent('status:failed')}`,
      `/durable/runs?q=${encodeURIComponent('workflow:bench_dash_1 status:cancelled')}`,
      `/durable/runs/${newest}`,
      `/durable/runs/${oldest}`,
      '/durable/keys',
      '/durable/keys?workflow=bench_dash_1',
      `/durable/keys?q=${encodeURIComponent(`item:${KEY}`)}`,
      '/durable/workflows',
      '/durable/workflows/bench_dash_1',
      `/durable/flows/${flow.flowId}`,
      '/durable/schedules',
      '/durable/activity',
      '/durable/nodes',
    ];
    const rows = [];
    for (const page of pages) {
      for (let r = 0; r < REPS; r++) {
        const res = await globalThis.fetch(`${base}${page}`, { redirect: 'manual' });
        await res.text();
        if (res.status !== 200) throw new Error(`${page} answered ${res.status}`);
      }
      const list = [...(times.get(page) ?? [])].sort((a, b) => a - b);
      const median = list[Math.floor(list.length / 2)];
      rows.push(
        `| \`${page.replace(newest, '<newest run>').replace(oldest, '<oldest run>').replace(flow.flowId, '<flow>')}\` | ${median.toFixed(1)} | ${list[0].toFixed(1)}–${list[list.length - 1].toFixed(1)} |`,
      );
      log(`${page}: ${median.toFixed(1)} ms`);
    }
    const facts = await envFacts(url).catch(() => null);
    const out = [
      '# Dashboard pages over a big history',
      '',
      `- date: ${new Date().toISOString()}; ${RUNS.toLocaleString()} runs, 100,000 activity records; ${REPS} requests per page`,
      facts ? `- Postgres: ${facts.pgVersion}; node ${facts.node}` : '',
      `- load average (1 min) at the end: ${require('os').loadavg()[0].toFixed(2)} on ${require('os').cpus().length} cores`,
      '',
      '| page | server time, median (ms) | min–max (ms) |',
      '| --- | --- | --- |',
      ...rows,
      '',
    ].join('\n');
    const file = process.env.BENCH_OUT || path.join(__dirname, 'results', 'dashboard.md');
    fs.writeFileSync(file, out);
    log(`wrote ${file}`);
  } finally {
    await app.close();
    await stopEmbedded();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
