'use strict';
// Costs over a big history (standalone; `npm run build` at the root first):
//
//   node bench/scale.js   # BENCH_HISTORY=5000000 BENCH_SCALE_DRAIN=30000 BENCH_SCALE_IDLE_S=60 BENCH_SCALE_ROUNDS=2
//
// Two schemas side by side: `bench_scale_empty` (no history) and `bench_scale_big` (BENCH_HISTORY
// finished runs, inserted with INSERT … SELECT generate_series: completed one-step runs spread over
// the last 29 days, one in ten with a key, then VACUUM ANALYZE). Each round measures the empty one,
// then the big one, so a drift of the machine's speed falls on both; the table shows the median of
// the rounds. Measures: an idle worker node's database reads (tuples read per minute from
// pg_stat_user_tables over BENCH_SCALE_IDLE_S, from `runs` and from all the schema's tables;
// sequential scans of runs), the pickup latency (300 sequential starts on an idle worker: p50/p99)
// and the one-step drain (BENCH_SCALE_DRAIN runs started first, then one worker at its defaults).
// The module runs at its defaults (concurrency 10, retention 30 days).
const { withClient, untilDrained } = require('./lib/db');
const { URL, oneStepWorkflow, bootDurable } = require('./lib/standalone');
const { now, sleep, percentile, median } = require('./lib/util');
const { fmt } = require('./lib/scenarios');

const EMPTY = 'bench_scale_empty';
const BIG = 'bench_scale_big';
const HISTORY = Number(process.env.BENCH_HISTORY || 5_000_000);
const DRAIN = Number(process.env.BENCH_SCALE_DRAIN || 30_000);
const IDLE_S = Number(process.env.BENCH_SCALE_IDLE_S || 60);
const ROUNDS = Number(process.env.BENCH_SCALE_ROUNDS || 2);
const LATENCY_SAMPLES = 300;

let onRun = null;
const BenchScale = oneStepWorkflow('bench_scale', undefined, () => {
  if (onRun) onRun();
});
const q = (text, values) => withClient(URL, async (c) => (await c.query(text, values)).rows);

/** Tuples read from the schema's tables (sequential + index fetches), from `runs` alone, and sequential scans of runs, as the statistics show them now. */
async function reads(schema) {
  await q('SELECT pg_stat_force_next_flush()').catch(() => undefined);
  const [r] = await q(
    `SELECT sum(coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0))::bigint AS tuples,
            sum(CASE WHEN relname = 'runs' THEN coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0) ELSE 0 END)::bigint AS runs_tuples,
            sum(CASE WHEN relname = 'runs' THEN seq_scan ELSE 0 END)::bigint AS runs_seq_scans
     FROM pg_stat_user_tables WHERE schemaname = $1`,
    [schema],
  );
  return { tuples: Number(r.tuples), runsTuples: Number(r.runs_tuples), runsSeqScans: Number(r.runs_seq_scans) };
}

async function idleReads(schema) {
  const node = await bootDurable({ schema, migrationsRun: false }, [BenchScale]);
  await sleep(5_000); // boot and first beats
  // a backend's counters reach the shared statistics within ~10 s of its last transaction
  await sleep(11_000);
  const a = await reads(schema);
  await sleep(IDLE_S * 1000);
  await sleep(11_000);
  const b = await reads(schema);
  await node.app.close();
  const perMinute = (x) => (x * 60) / IDLE_S;
  return { perMinute: perMinute(b.tuples - a.tuples), runsPerMinute: perMinute(b.runsTuples - a.runsTuples), runsSeqScans: b.runsSeqScans - a.runsSeqScans };
}

async function latency(schema) {
  const { app, durable } = await bootDurable({ schema, migrationsRun: false }, [BenchScale]);
  await sleep(500);
  const samples = [];
  for (let k = -20; k < LATENCY_SAMPLES; k++) {
    const t0 = now();
    const picked = new Promise((resolve) => (onRun = () => resolve(now())));
    await durable.start(BenchScale, { k });
    const at = await picked;
    if (k >= 0) samples.push(at - t0);
    await sleep(2);
  }
  onRun = null;
  await untilDrained(URL, schema, LATENCY_SAMPLES + 20, { workflow: 'bench_scale' });
  await app.close();
  await q(`DELETE FROM ${schema}.runs WHERE workflow = 'bench_scale'`); // the drain counts its own runs
  samples.sort((x, y) => x - y);
  return { p50: percentile(samples, 50), p99: percentile(samples, 99) };
}

async function drain(schema, producer) {
  for (let left = DRAIN; left > 0; left -= 5000)
    await producer.startMany(
      BenchScale,
      Array.from({ length: Math.min(5000, left) }, (_, i) => ({ input: { i } })),
    );
  await q(`ANALYZE ${schema}.runs`);
  const t0 = Date.now();
  const { app } = await bootDurable({ schema, migrationsRun: false }, [BenchScale]);
  // every 5 ms, through the indexes of live runs: a count over the history would slow the drain it times
  const rate = (DRAIN / ((await untilDrained(URL, schema, DRAIN, { workflow: 'bench_scale', every: 5 })) - t0)) * 1000;
  await app.close();
  return rate;
}

async function measure(label, schema, producer) {
  console.error(`${label}: idle node reads over ${IDLE_S} s`);
  const idle = await idleReads(schema);
  console.error(`${label}: pickup latency`);
  const lat = await latency(schema);
  console.error(`${label}: drain of ${fmt(DRAIN)}`);
  const rate = await drain(schema, producer);
  // the drained runs leave; the history stays
  await q(`DELETE FROM ${schema}.runs WHERE workflow = 'bench_scale'`);
  await q(`VACUUM ${schema}.runs`);
  const m = { idle, lat, rate };
  console.error(`${label}: ${JSON.stringify(m)}`);
  return m;
}

async function addHistory(schema) {
  const t0 = now();
  for (let from = 0; from < HISTORY; from += 500_000) {
    const to = Math.min(HISTORY, from + 500_000);
    await q(
      `INSERT INTO ${schema}.runs (id, workflow, key, holds_key, status, input, result, step, attempt, run_at, created_at, started_at, finished_at)
       SELECT gen_random_uuid(), 'history_' || (g % 20), CASE WHEN g % 10 = 0 THEN 'k' || g END, g % 10 = 0, 'completed',
              jsonb_build_object('i', g), 'null', 1, 1, t, t, t, t + interval '5 ms'
       FROM generate_series($1::int, $2::int - 1) g, LATERAL (SELECT now() - (g % 2505600) * interval '1 second' AS t) x`,
      [from, to],
    );
  }
  await q(`VACUUM ANALYZE ${schema}.runs`);
  console.error(`history: ${fmt(HISTORY)} finished runs in ${Math.round((now() - t0) / 1000)} s`);
}

/** The median of each figure over the rounds' measures. */
function medians(ms) {
  const med = (pick) => median(ms.map(pick).sort((x, y) => x - y));
  return {
    idle: { perMinute: med((m) => m.idle.perMinute), runsPerMinute: med((m) => m.idle.runsPerMinute), runsSeqScans: med((m) => m.idle.runsSeqScans) },
    lat: { p50: med((m) => m.lat.p50), p99: med((m) => m.lat.p99) },
    rate: med((m) => m.rate),
  };
}

(async () => {
  const producers = {};
  for (const schema of [EMPTY, BIG]) {
    await q(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    producers[schema] = await bootDurable({ schema, worker: false }, [BenchScale]);
  }
  await addHistory(BIG);
  const runs = { [EMPTY]: [], [BIG]: [] };
  for (let r = 1; r <= ROUNDS; r++)
    for (const [schema, label] of [
      [EMPTY, 'empty history'],
      [BIG, `${fmt(HISTORY)} finished runs`],
    ])
      runs[schema].push(await measure(`round ${r}, ${label}`, schema, producers[schema].durable));
  const empty = medians(runs[EMPTY]);
  const big = medians(runs[BIG]);
  const pct = (a, b) => `${b >= a ? '+' : ''}${(((b - a) / (a || 1)) * 100).toFixed(0)}%`;
  const row = (name, a, b, f) => `| ${name} | ${f(a)} | ${f(b)} | ${pct(a, b)} |`;
  console.log(
    [
      `\n| figure (median of ${ROUNDS} alternating rounds) | empty history | ${fmt(HISTORY)} finished runs | change |`,
      '|---|---|---|---|',
      row('idle node: tuples read per minute, all tables', empty.idle.perMinute, big.idle.perMinute, fmt),
      row('idle node: tuples read per minute from runs', empty.idle.runsPerMinute, big.idle.runsPerMinute, fmt),
      `| idle node: sequential scans of runs in ${IDLE_S} s | ${empty.idle.runsSeqScans} | ${big.idle.runsSeqScans} | |`,
      row('pickup latency p50, ms', empty.lat.p50, big.lat.p50, (x) => x.toFixed(2)),
      row('pickup latency p99, ms', empty.lat.p99, big.lat.p99, (x) => x.toFixed(2)),
      row(`drain of ${fmt(DRAIN)} one-step runs, runs/s`, empty.rate, big.rate, fmt),
      '',
      `each round: ${runs[EMPTY].map((m, k) => `${fmt(m.rate)} / ${fmt(runs[BIG][k].rate)} runs/s, p50 ${m.lat.p50.toFixed(2)} / ${runs[BIG][k].lat.p50.toFixed(2)} ms`).join('; ')}`,
      `load average at end ${require('os').loadavg()[0].toFixed(2)}`,
    ].join('\n'),
  );
  for (const p of Object.values(producers)) await p.app.close();
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
