'use strict';
// The one-step drain at several worker concurrencies, every system given the same one at each step:
// nestjs-durable (its defaults otherwise), graphile-worker with its local queue and batched completion,
// and graphile-worker's defaults. Usage: node bench/concurrency.js (BENCH_CONCURRENCIES=1,10,50,500,
// BENCH_SCALE, BENCH_REPS as in run.js). Writes results/concurrency.md (quick-concurrency.md below scale 1).
const fs = require('fs');
const path = require('path');
const { resolveUrl, stopEmbedded, envFacts } = require('./lib/db');
const { sizes, fmt, reps } = require('./lib/scenarios');
const { summarize, log, scale } = require('./lib/util');
const { runChildRetrying, snapshotLibrary } = require('./lib/fork');

const SYSTEMS = [
  ['ours', 'ours'],
  ['graphile', 'graphile (batched)'],
  ['graphile-default', 'graphile (default)'],
];

const cell = (s) => (s ? `${fmt(s.median)} (${fmt(s.min)}–${fmt(s.max)})` : 'n/a');
const ratio = (a, b) => (a && b && b.median ? `${(a.median / b.median).toFixed(2)}×` : '');

async function main() {
  const t0 = Date.now();
  const lib = snapshotLibrary();
  const url = await resolveUrl({ log });
  const env = await envFacts(url);
  const levels = (process.env.BENCH_CONCURRENCIES || '1,10,50,500').split(',').map(Number);
  const rows = [];
  const errors = [];
  for (const c of levels) {
    const row = { c };
    for (const [variant] of SYSTEMS) {
      log(`drain at concurrency ${c} — ${variant}`);
      const r = await runChildRetrying(url, variant, 'drain', ['drain'], { BENCH_CONCURRENCY: String(c) });
      if (r.ok) row[variant] = summarize(r.result.drain);
      else errors.push(`${variant} at ${c}: ${r.error}`);
    }
    rows.push(row);
  }
  const head = ['worker concurrency', ...SYSTEMS.map(([, l]) => `${l}, runs/s`), 'ours / graphile (batched)', 'ours / graphile (default)'];
  const table = [
    head,
    head.map(() => '---'),
    ...rows.map((r) => [r.c, ...SYSTEMS.map(([v]) => cell(r[v])), ratio(r.ours, r.graphile), ratio(r.ours, r['graphile-default'])]),
  ]
    .map((r) => `| ${r.join(' | ')} |`)
    .join('\n');
  const md = [
    '# One-step drain by worker concurrency',
    '',
    `- date: ${env.date}; Postgres: ${env.pgVersion.split(' on ')[0]}; node ${env.node}; ${env.cores} cores; nestjs-durable at ${lib.commit}`,
    `- load average (1 min) at start ${env.load1.toFixed(2)}, at end ${require('os').loadavg()[0].toFixed(2)}`,
    `- ${fmt(sizes().drain)} one-step no-op runs enqueued first, then drained by one worker process; median of ${reps()} (min–max); scale ${scale()}; wall time ${Math.round((Date.now() - t0) / 1000)} s`,
    '- every system at the concurrency of the row; everything else at its defaults (graphile batched: localQueue.size 1000, completeJobBatchDelay 0)',
    ...(errors.length ? [`- errors: ${errors.join('; ')}`] : []),
    '',
    table,
    '',
  ].join('\n');
  console.log(`\n${md}`);
  const out = process.env.BENCH_OUT || path.join(__dirname, 'results', scale() === 1 ? 'concurrency.md' : 'quick-concurrency.md');
  fs.writeFileSync(out, md);
  log(`wrote ${path.relative(process.cwd(), out)}`);
  await stopEmbedded();
}

main().catch(async (e) => {
  console.error(e);
  await stopEmbedded();
  process.exit(1);
});
