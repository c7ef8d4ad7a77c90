'use strict';
// Costs over a big history (standalone; `npm run build` at the root first):
//
//   node bench/scale.js       # BENCH_HISTORY=5000000  BENCH_SCALE_DRAIN=30000  BENCH_SCALE_IDLE_S=60
//
// Measures, on an empty history and then with BENCH_HISTORY finished runs in it (inserted with
// INSERT … SELECT generate_series: completed one-step runs spread over the last 29 days, one in ten
// with a key, then VACUUM ANALYZE): an idle worker node's database reads (tuples read per minute
// from pg_stat_user_tables over BENCH_SCALE_IDLE_S; sequential scans of runs), the pickup latency
// (300 sequential starts on an idle worker: p50/p99) and the one-step drain (BENCH_SCALE_DRAIN runs
// started first, then one worker at its defaults). The module runs at its defaults (concurrency 10,
// retention 30 days). Schema `bench_scale` (dropped first).
const { withClient, untilDrained } = require('./lib/db');
const { URL, oneStepWorkflow, bootDurable } = require('./lib/standalone');
const { now, sleep, percentile } = require('./lib/util');
const { fmt } = require('./lib/scenarios');

const SCHEMA = 'bench_scale';
const HISTORY = Number(process.env.BENCH_HISTORY || 5_000_000);
const DRAIN = Number(process.env.BENCH_SCALE_DRAIN || 30_000);
const IDLE_S = Number(process.env.BENCH_SCALE_IDLE_S || 60);
const LATENCY_SAMPLES = 300;

let onRun = null;
const BenchScale = oneStepWorkflow('bench_scale', undefined, () => {
  if (onRun) onRun();
});
const q = (text, values) => withClient(URL, async (c) => (await c.query(text, values)).rows);

/** Tuples read from the schema's tables (sequential + index fetches) and sequential scans of runs, as the statistics show them now. */
async function reads() {
  await q('SELECT pg_stat_force_next_flush()').catch(() => undefined);
  const [r] = await q(
    `SELECT sum(coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0))::bigint AS tuples,
            sum(CASE WHEN relname = 'runs' THEN seq_scan ELSE 0 END)::bigint AS runs_seq_scans
     FROM pg_stat_user_tables WHERE schemaname = $1`,
    [SCHEMA],
  );
  return { tuples: Number(r.tuples), runsSeqScans: Number(r.runs_seq_scans) };
}

async function idleReads() {
  const node = await bootDurable({ schema: SCHEMA, migrationsRun: false }, [BenchScale]);
  await sleep(5_000); // boot and first beats
  // a backend's counters reach the shared statistics within ~10 s of its last transaction
  await sleep(11_000);
  const a = await reads();
  await sleep(IDLE_S * 1000);
  await sleep(11_000);
  const b = await reads();
  await node.app.close();
  return { perMinute: ((b.tuples - a.tuples) * 60) / IDLE_S, runsSeqScans: b.runsSeqScans - a.runsSeqScans };
}

async function latency() {
  const { app, durable } = await bootDurable({ schema: SCHEMA, migrationsRun: false }, [BenchScale]);
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
  await untilDrained(URL, SCHEMA, LATENCY_SAMPLES + 20, { workflow: 'bench_scale' });
  await app.close();
  await q(`DELETE FROM ${SCHEMA}.runs WHERE workflow = 'bench_scale'`); // the drain counts its own runs
  samples.sort((x, y) => x - y);
  return { p50: percentile(samples, 50), p99: percentile(samples, 99) };
}

async function drain(producer) {
  for (let left = DRAIN; left > 0; left -= 5000)
    await producer.startMany(
      BenchScale,
      Array.from({ length: Math.min(5000, left) }, (_, i) => ({ input: { i } })),
    );
  await q(`ANALYZE ${SCHEMA}.runs`);
  const t0 = Date.now();
  const { app } = await bootDurable({ schema: SCHEMA, migrationsRun: false }, [BenchScale]);
  // every 5 ms, through the indexes of live runs: a count over the history would slow the drain it times
  const rate = (DRAIN / ((await untilDrained(URL, SCHEMA, DRAIN, { workflow: 'bench_scale', every: 5 })) - t0)) * 1000;
  await app.close();
  return rate;
}

async function measure(label, producer) {
  console.error(`${label}: idle node reads over ${IDLE_S} s`);
  const idle = await idleReads();
  console.error(`${label}: pickup latency`);
  const lat = await latency();
  console.error(`${label}: drain of ${fmt(DRAIN)}`);
  const rate = await drain(producer);
  // the drained runs leave; the history stays
  await q(`DELETE FROM ${SCHEMA}.runs WHERE workflow = 'bench_scale'`);
  const m = { idle, lat, rate };
  console.error(`${label}: ${JSON.stringify(m)}`);
  return m;
}

async function addHistory() {
  const t0 = now();
  for (let from = 0; from < HISTORY; from += 500_000) {
    const to = Math.min(HISTORY, from + 500_000);
    await q(
      `INSERT INTO ${SCHEMA}.runs (id, workflow, key, holds_key, status, input, result, step, attempt, run_at, created_at, started_at, finished_at)
       SELECT gen_random_uuid(), 'history_' || (g % 20), CASE WHEN g % 10 = 0 THEN 'k' || g END, g % 10 = 0, 'completed',
              jsonb_build_object('i', g), 'null', 1, 1, t, t, t, t + interval '5 ms'
       FROM generate_series($1::int, $2::int - 1) g, LATERAL (SELECT now() - (g % 2505600) * interval '1 second' AS t) x`,
      [from, to],
    );
  }
  await q(`VACUUM ANALYZE ${SCHEMA}.runs`);
  console.error(`history: ${fmt(HISTORY)} finished runs in ${Math.round((now() - t0) / 1000)} s`);
}

(async () => {
  await q(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
  const producer = await bootDurable({ schema: SCHEMA, worker: false }, [BenchScale]);
  const empty = await measure('empty history', producer.durable);
  await addHistory();
  const big = await measure(`${fmt(HISTORY)} finished runs`, producer.durable);
  const pct = (a, b) => `${b >= a ? '+' : ''}${(((b - a) / (a || 1)) * 100).toFixed(0)}%`;
  const row = (name, a, b, f) => `| ${name} | ${f(a)} | ${f(b)} | ${pct(a, b)} |`;
  console.log(
    [
      `\n| figure | empty history | ${fmt(HISTORY)} finished runs | change |`,
      '|---|---|---|---|',
      row('idle node: tuples read per minute', empty.idle.perMinute, big.idle.perMinute, fmt),
      `| idle node: sequential scans of runs in ${IDLE_S} s | ${empty.idle.runsSeqScans} | ${big.idle.runsSeqScans} | |`,
      row('pickup latency p50, ms', empty.lat.p50, big.lat.p50, (x) => x.toFixed(2)),
      row('pickup latency p99, ms', empty.lat.p99, big.lat.p99, (x) => x.toFixed(2)),
      row(`drain of ${fmt(DRAIN)} one-step runs, runs/s`, empty.rate, big.rate, fmt),
      '',
      `load average at end ${require('os').loadavg()[0].toFixed(2)}`,
    ].join('\n'),
  );
  await producer.app.close();
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
