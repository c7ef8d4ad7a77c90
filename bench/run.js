'use strict';
// nestjs-durable vs graphile-worker vs pg-boss, on one Postgres, in one run. See bench/README.md.
const fs = require('fs');
const path = require('path');
const { resolveUrl, stopEmbedded, envFacts } = require('./lib/db');
const { METRICS, GROUP_OF, sizes, sizesFor, reps, fmt, boxMs, enqueueBoxMs, startsBoxMs } = require('./lib/scenarios');
const { summarize, log, scale } = require('./lib/util');
const { runChildRetrying, snapshotLibrary } = require('./lib/fork');

const ALL_VARIANTS = ['ours', 'graphile', 'graphile-default', 'pgboss', 'raw'];
const LABEL = {
  ours: 'nestjs-durable',
  graphile: 'graphile-worker (local queue + batched completion)',
  'graphile-default': 'graphile-worker (defaults)',
  pgboss: 'pg-boss',
  raw: 'raw SQL reference (Postgres floor on this machine)',
};
const SHORT = { ours: 'ours', graphile: 'graphile (batched)', 'graphile-default': 'graphile (default)', pgboss: 'pg-boss', raw: 'raw SQL' };
const ALL_METRICS = ['drain', 'five', 'starts1', 'starts16', 'starts1n', 'starts16n', 'bulk', 'p50', 'p99'];
// graphile's producer side does not depend on the worker configuration, so the default configuration
// only repeats the worker-side scenarios (and skips the five-step chain to stay inside the time budget).
const DEFAULT_GRAPHILE_METRICS = new Set((process.env.BENCH_GRAPHILE_DEFAULT_METRICS || 'drain,p50,p99').split(','));

function selectedVariants() {
  const only = (process.env.BENCH_ONLY || '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (!only.length) return ALL_VARIANTS;
  return ALL_VARIANTS.filter((v) => only.some((o) => v === o || (o === 'graphile' && v.startsWith('graphile'))));
}
function selectedMetrics() {
  const s = (process.env.BENCH_SCENARIOS || '')
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);
  if (!s.length) return ALL_METRICS;
  const out = new Set();
  for (const x of s) {
    if (x === 'starts') {
      out.add('starts1');
      out.add('starts16');
      out.add('starts1n');
      out.add('starts16n');
    } else if (x === 'latency') {
      out.add('p50');
      out.add('p99');
    } else if (METRICS[x]) out.add(x);
    else throw new Error(`unknown scenario ${x} (use drain, bulk, five, starts, latency)`);
  }
  return ALL_METRICS.filter((m) => out.has(m));
}

function cell(s, metric) {
  if (!s) return 'n/a';
  const d = METRICS[metric].unit === 'ms' ? (x) => x.toFixed(2) : fmt;
  return `${d(s.median)} (${d(s.min)}–${d(s.max)})`;
}
function ratio(a, b) {
  if (!a || !b || !b.median) return '';
  const r = a.median / b.median;
  return `${r >= 10 ? r.toFixed(0) : r.toFixed(2)}×`;
}

async function main() {
  const t0 = Date.now();
  const lib = snapshotLibrary();
  const url = await resolveUrl({ log });
  const env = await envFacts(url);
  const variants = selectedVariants();
  const metrics = selectedMetrics();
  const sz = sizes();
  log(`bench: scale ${scale()}, ${reps()} reps, systems ${variants.join(', ')}, metrics ${metrics.join(', ')}`);
  log(`postgres: ${env.pgVersion.split(' on ')[0]}; node ${env.node}; ${env.cores} cores; nestjs-durable ${lib.commit}`);

  const results = {}; // variant -> metric -> summary
  const info = {}; // variant -> { describe, fiveStepModel, errors: [], meta: { metric: [...] } }
  const timings = {}; // variant -> group -> seconds
  const groups = [...new Set(metrics.map((m) => GROUP_OF[m]))];
  for (const group of groups) {
    for (const variant of variants) {
      let wanted = metrics.filter((m) => GROUP_OF[m] === group);
      if (variant === 'graphile-default') wanted = wanted.filter((m) => DEFAULT_GRAPHILE_METRICS.has(m));
      if (!wanted.length) continue;
      log(`${group} — ${LABEL[variant]} (${wanted.join(', ')})`);
      const c0 = Date.now();
      const r = await runChildRetrying(url, variant, group, wanted);
      (timings[variant] = timings[variant] || {})[group] = Math.round((Date.now() - c0) / 1000);
      info[variant] = info[variant] || { errors: [] };
      if (r.describe) info[variant].describe = r.describe;
      if (r.fiveStepModel) info[variant].fiveStepModel = r.fiveStepModel;
      if (!r.ok) {
        info[variant].errors.push(`${group}: ${r.error}`);
        continue;
      }
      for (const m of wanted) if (r.result[m]) (results[variant] = results[variant] || {})[m] = summarize(r.result[m]);
      for (const [m, v] of Object.entries(r.result.meta || {})) (info[variant].meta = info[variant].meta || {})[m] = v;
    }
  }

  const verdict = (m, st) => {
    const t = /^([≥≤])\s*([\d,.]+)/.exec(METRICS[m].target);
    if (!t || !st) return '';
    const goal = Number(t[2].replace(/,/g, ''));
    const ok = t[1] === '≥' ? st.median >= goal : st.median <= goal;
    const f = t[1] === '≥' ? st.median / goal : goal / st.median;
    return ok ? `met (${f.toFixed(2)}× target)` : `missed: ${(f * 100).toFixed(0)}% of target`;
  };
  const head = [
    'Scenario',
    'target (ours)',
    ...(variants.includes('ours') ? ['ours vs target'] : []),
    ...variants.flatMap((v) => (v === 'ours' ? [SHORT[v]] : [SHORT[v], `ours / ${SHORT[v]}`])),
  ];
  const rows = metrics
    .filter((m) => variants.some((v) => results[v] && results[v][m]))
    .map((m) => {
      const mine = results.ours && results.ours[m];
      return [
        `${METRICS[m].title}, ${METRICS[m].unit}`,
        METRICS[m].target,
        ...(variants.includes('ours') ? [verdict(m, mine)] : []),
        ...variants.flatMap((v) => {
          const s = results[v] && results[v][m];
          return v === 'ours' ? [cell(s, m)] : [cell(s, m), variants.includes('ours') ? ratio(mine, s) : ''];
        }),
      ];
    });
  const table = [head, head.map(() => '---'), ...rows].map((r) => `| ${r.join(' | ')} |`).join('\n');

  const notes = [];
  notes.push(
    `Each cell: median of ${reps()} runs (min–max). Ratios are ours ÷ theirs on the median: above 1 is better for throughput, below 1 is better for latency. For latency, "% of target" is target ÷ ours.`,
  );
  notes.push(
    `Sizes: drain ${fmt(sz.drain)} one-step runs; five-step ${fmt(sz.five)} runs (${fmt(sz.five * 5)} checkpoints); starts ${fmt(sz.starts)} per caller count (16 callers share them); bulk = the drain's enqueue phase (${fmt(sz.drain)} runs in batches of ${fmt(sz.batch)}); latency ${fmt(sz.latency)} sequential samples after 20 warm-up.`,
  );
  const capped = [];
  for (const v of variants) {
    const s = sizesFor(v);
    for (const k of ['drain', 'five', 'latency'])
      if (s[k] !== sz[k]) capped.push(`${SHORT[v]} ${k} ${fmt(s[k])}${k === 'five' ? ' runs' : k === 'latency' ? ' samples' : ' runs'}`);
  }
  const boxedNotes = [];
  for (const v of variants) {
    for (const [m, list] of Object.entries((info[v] && info[v].meta) || {})) {
      const b = list.filter((x) => x.boxed);
      if (!b.length) continue;
      const u = b.map((x) => x.units).sort((a, c) => a - c);
      boxedNotes.push(
        `${SHORT[v]} ${m} ${b.length}/${list.length} reps (${fmt(u[0])}${u.length > 1 ? `–${fmt(u.at(-1))}` : ''} of ${fmt(b[0].of)}${m === 'five' ? ' checkpoints' : ''})`,
      );
    }
  }
  const startups = variants
    .map((v) => {
      const l = ((info[v] && info[v].meta && info[v].meta.drain) || [])
        .map((x) => x.startupMs)
        .filter(Number.isFinite)
        .sort((a, c) => a - c);
      return l.length ? `${SHORT[v]} ${Math.round(l[l.length >> 1])}` : null;
    })
    .filter(Boolean);
  if (startups.length) notes.push(`Drain start-up, worker-start call to first handler call (ms, median; inside the drain time): ${startups.join('; ')}.`);
  notes.push(
    `Time boxes: enqueue ${enqueueBoxMs() / 1000} s, drain and five-step ${boxMs() / 1000} s, each starts measurement ${startsBoxMs() / 1000} s per repetition; a box that ends first gives the rate over the part done inside it.${boxedNotes.length ? ` Boxed here: ${boxedNotes.join('; ')}.` : ' None was hit.'}`,
  );
  if (capped.length)
    notes.push(`Capped to stay inside the time budget (a slow system at that work, or pg-boss's 0.5 s poll per latency sample): ${capped.join('; ')}.`);
  notes.push(
    "Drain: all runs enqueued first (bulk), `ANALYZE` on the system's tables, then timed from the worker-start call until the database shows every run completed (graphile deletes completed jobs: queue empty). Pickup latency: from just before the start/addJob/send call to the first line of the step handler, one run at a time on an idle worker, 2 ms apart (pg-boss: 2 ms + a random part of its polling interval, so samples do not phase-lock to its poll loop).",
  );
  for (const v of variants) {
    const i = info[v] || {};
    notes.push(
      `**${LABEL[v]}**: ${i.describe || ''}${i.fiveStepModel ? `; five-step modelled as ${i.fiveStepModel}` : ''}.${i.errors && i.errors.length ? ` Errors: ${i.errors.join('; ')}` : ''}`,
    );
  }
  if (variants.includes('graphile-default'))
    notes.push(`graphile (default) runs only ${[...DEFAULT_GRAPHILE_METRICS].join(', ')}: its producer side is identical to the batched configuration.`);

  notes.push(
    `Wall time per child (s): ${Object.entries(timings)
      .map(
        ([v, g]) =>
          `${SHORT[v]} ${Object.entries(g)
            .map(([k, x]) => `${k} ${x}`)
            .join(', ')}`,
      )
      .join('; ')}.`,
  );
  const md = [
    `# nestjs-durable benchmark`,
    '',
    `- date: ${env.date}`,
    `- Postgres: ${env.pgVersion} (${Object.entries(env.pgSettings)
      .map(([k, v]) => `${k}=${v}`)
      .join(', ')})`,
    `- nestjs-durable at ${lib.commit}, dist built ${lib.built}`,
    `- node ${env.node}; ${env.cores} cores (${env.cpu}), ${env.memGb} GB RAM`,
    `- load average (1 min) at start ${env.load1.toFixed(2)}, at end ${require('os').loadavg()[0].toFixed(2)} — the 2 cores are shared with whatever else runs on the machine`,
    `- scale ${scale()}${process.env.BENCH_ONLY ? `, BENCH_ONLY=${process.env.BENCH_ONLY}` : ''}${process.env.BENCH_SCENARIOS ? `, BENCH_SCENARIOS=${process.env.BENCH_SCENARIOS}` : ''}; wall time ${Math.round((Date.now() - t0) / 1000)} s`,
    '',
    table,
    '',
    ...notes.map((n) => `- ${n}`),
    '',
  ].join('\n');

  console.log(`\n${table}\n`);
  for (const n of notes) console.log(`- ${n}`);
  const full = scale() === 1 && !process.env.BENCH_ONLY && !process.env.BENCH_SCENARIOS;
  const outFile = process.env.BENCH_OUT || path.join(__dirname, 'results', full ? 'latest.md' : 'quick.md');
  fs.mkdirSync(path.dirname(outFile), { recursive: true });
  fs.writeFileSync(outFile, md);
  fs.writeFileSync(outFile.replace(/\.md$/, '.json'), JSON.stringify({ env, scale: scale(), reps: reps(), sizes: sz, info, results }, null, 2));
  log(`wrote ${path.relative(process.cwd(), outFile)} (${Math.round((Date.now() - t0) / 1000)} s total)`);
  await stopEmbedded();
}

main().catch(async (e) => {
  console.error(e);
  await stopEmbedded();
  process.exit(1);
});
