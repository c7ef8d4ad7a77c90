'use strict';
// Queue controls: the one-step drain of nestjs-durable without controls, with a concurrency limit of
// 1 per group over 1,000 groups, and with a rate limit, each drained by one worker process at the same
// concurrency. Usage: node bench/controls.js (BENCH_CONCURRENCY default 50, BENCH_RATE default 2000, BENCH_SCALE, BENCH_REPS).
// Writes results/controls.md (quick-controls.md below scale 1).
require('reflect-metadata');
const fs = require('fs');
const path = require('path');
const os = require('os');
const { resolveUrl, stopEmbedded, envFacts, withClient, untilDrained } = require('./lib/db');
const { reps, fmt } = require('./lib/scenarios');
const { log, scale, summarize } = require('./lib/util');

const SCHEMA = 'bench_controls';
const GROUPS = 1000;
const RATE = Number(process.env.BENCH_RATE || 2000); // runs per second the rate-limited workflow allows

function library() {
  return require(process.env.BENCH_OURS_LIB || 'nestjs-durable');
}

/** Workflow classes, decorated by hand as a plain-JS user would; `running` tracks runs in flight per group. */
function defineWorkflows(lib) {
  const { Workflow, Step } = lib;
  const inFlight = new Map();
  const seen = { maxPerGroup: 0 };
  const define = (name, options, body) => {
    const cls = class {
      async run(ctx) {
        return body(ctx);
      }
    };
    const desc = Object.getOwnPropertyDescriptor(cls.prototype, 'run');
    const out = Step()(cls.prototype, 'run', desc);
    if (out) Object.defineProperty(cls.prototype, 'run', out);
    Workflow(name, options)(cls);
    return cls;
  };
  const Plain = define('ctl_plain', {}, async () => undefined);
  const Grouped = define('ctl_grouped', { concurrency: { limit: 1, by: (input) => `g${input.g}` } }, async (ctx) => {
    const g = ctx.input.g;
    const n = (inFlight.get(g) ?? 0) + 1;
    inFlight.set(g, n);
    seen.maxPerGroup = Math.max(seen.maxPerGroup, n);
    await new Promise((r) => setImmediate(r));
    inFlight.set(g, inFlight.get(g) - 1);
  });
  const Rated = define('ctl_rated', { rateLimit: { limit: RATE, period: '1s' } }, async () => undefined);
  return { Plain, Grouped, Rated, seen };
}

async function main() {
  const lib = library();
  const { Module } = require('@nestjs/common');
  const { NestFactory } = require('@nestjs/core');
  const { DurableModule, DurableService } = lib;
  const url = await resolveUrl({ log });
  const env = await envFacts(url);
  const concurrency = Number(process.env.BENCH_CONCURRENCY || 50);
  const wf = defineWorkflows(lib);
  const app = async (worker) => {
    class BenchModule {}
    Module({
      imports: [DurableModule.forRoot({ url, schema: SCHEMA, worker: worker ? { concurrency, pollInterval: '1s' } : false, shutdownTimeout: '5s' })],
      providers: [wf.Plain, wf.Grouped, wf.Rated],
    })(BenchModule);
    const a = await NestFactory.createApplicationContext(BenchModule, { logger: false });
    return { app: a, durable: a.get(DurableService) };
  };
  const n = Math.max(2000, Math.round(20_000 * scale()));
  const producer = await app(false);
  const scenarios = [
    ['no controls', wf.Plain, (i) => ({ i })],
    [`concurrency 1 per group, ${GROUPS} groups`, wf.Grouped, (i) => ({ i, g: i % GROUPS })],
    [`rate limit ${RATE}/s`, wf.Rated, (i) => ({ i })],
  ];
  const rows = [];
  for (const [label, cls, input] of scenarios) {
    const rates = [];
    let worstWindow = 0;
    wf.seen.maxPerGroup = 0;
    for (let r = 0; r < reps(); r++) {
      await withClient(url, (c) => c.query(`TRUNCATE ${SCHEMA}.runs, ${SCHEMA}.step_attempts, ${SCHEMA}.activity CASCADE`));
      for (let i = 0; i < n; i += 5000) {
        await producer.durable.startMany(
          cls,
          Array.from({ length: Math.min(5000, n - i) }, (_, k) => ({ input: input(i + k) })),
        );
      }
      await withClient(url, (c) => c.query(`ANALYZE ${SCHEMA}.runs`));
      const t0 = Date.now();
      const worker = await app(true);
      rates.push((n * 1000) / ((await untilDrained(url, SCHEMA, n)) - t0));
      await worker.app.close();
      // the most runs begun in any one-second window (a run is begun once: attempt 1)
      const [{ most }] = (
        await withClient(url, (c) =>
          c.query(
            `SELECT coalesce(max(w), 0)::int AS most FROM (
               SELECT count(*) OVER (ORDER BY started_at RANGE BETWEEN CURRENT ROW AND interval '999 milliseconds' FOLLOWING) AS w
               FROM ${SCHEMA}.runs) x`,
          ),
        )
      ).rows;
      worstWindow = Math.max(worstWindow, most);
    }
    const s = summarize(rates);
    rows.push({ label, s, maxPerGroup: cls === wf.Grouped ? wf.seen.maxPerGroup : null, worstWindow });
    log(`${label}: ${fmt(s.median)} runs/s`);
  }
  await producer.app.close();
  const table = [
    '| drain | runs/s, median (min–max) | ÷ no controls | most runs of one group at once | most runs begun in any 1 s |',
    '| --- | --- | --- | --- | --- |',
    ...rows.map(
      (r) =>
        `| ${r.label} | ${fmt(r.s.median)} (${fmt(r.s.min)}–${fmt(r.s.max)}) | ${(r.s.median / rows[0].s.median).toFixed(2)}× | ${r.maxPerGroup ?? '—'} | ${fmt(r.worstWindow)} |`,
    ),
  ].join('\n');
  const md = [
    '# Queue controls: drains with and without limits',
    '',
    `- date: ${env.date}; Postgres: ${env.pgVersion.split(' on ')[0]}; node ${env.node}; ${env.cores} cores`,
    `- load average (1 min) at start ${env.load1.toFixed(2)}, at end ${os.loadavg()[0].toFixed(2)}`,
    `- ${fmt(n)} one-step runs enqueued first (startMany), then drained by one worker process at concurrency ${concurrency}; median of ${reps()}`,
    '',
    table,
    '',
  ].join('\n');
  console.log(`\n${md}`);
  const out = path.join(__dirname, 'results', scale() < 1 ? 'quick-controls.md' : 'controls.md');
  fs.writeFileSync(out, md);
  log(`wrote ${path.relative(process.cwd(), out)}`);
  await stopEmbedded();
}

main().catch(async (err) => {
  console.error(err);
  await stopEmbedded().catch(() => undefined);
  process.exit(1);
});
