'use strict';
// Costs over a big history (standalone; `npm run build` at the root first):
//
//   node bench/scale.js   # BENCH_HISTORY=5000000 BENCH_SCALE_PICKUP_SAMPLES=10000 BENCH_SCALE_DRAIN=20000 BENCH_SCALE_ROUNDS=10 BENCH_SCALE_IDLE_S=60
//
// Two schemas side by side: `bench_scale_empty` (no history) and `bench_scale_big` (BENCH_HISTORY
// finished runs, inserted with INSERT … SELECT generate_series: completed one-step runs spread over
// the last 29 days, one in ten with a key, then VACUUM ANALYZE). The question is whether the big
// history moves a figure by more than 10% on a shared machine whose speed drifts by more than that
// within minutes, so the two schemas are measured as close together in time as each measure allows
// and every comparison is a ratio big ÷ empty taken between neighbouring measurements:
//
// - idle reads: a worker node on each schema, both booted and left idle over the same
//   BENCH_SCALE_IDLE_S; tuples read per minute from pg_stat_user_tables (from `runs` and from all the
//   schema's tables) and sequential scans of runs. Counts, not timings: measured once.
// - pickup latency: a worker node on each schema, both up at once in this process; starts alternate
//   between them sample by sample (each pair's order drawn at random; 20 warm-up pairs),
//   BENCH_SCALE_PICKUP_SAMPLES per schema, each from the start call on the worker's own node to the
//   first line of the step; the next sample starts 2 ms after the run has completed, so that no
//   sample overlaps the completion of another schema's run. Both schemas are analysed first (a
//   server may run without autovacuum). Whatever load the machine has falls on both alike. p50/p99 per schema,
//   their ratios with a 95% interval (bootstrap over the pairs), and the per-pair ratios' spread.
// - drain: BENCH_SCALE_ROUNDS rounds; each enqueues BENCH_SCALE_DRAIN one-step runs in both schemas,
//   ANALYZE, then drains one schema and right after it the other (empty first in odd rounds, big
//   first in even ones), each with one worker node at its defaults booted for it, timed from its boot
//   until the database shows no run pending or running. The figure is the median of the rounds'
//   ratios, with the interval for that median that two of the sorted ratios give by the binomial
//   (sign test) rule: min–max up to 8 rounds (97% with 6, 87.5% with 4), the 2nd lowest to the 2nd
//   highest from 9 to 11 (98% with 10). Below the table, each ratio's interval is said to lie within
//   ±10%, beyond it, or neither (for the drain only from 5 rounds: 4 give an 87.5% interval).
//
// The module runs at its defaults (concurrency 10, retention 30 days).
const { Client } = require('pg');
const { withClient, untilDrained } = require('./lib/db');
const { URL, oneStepWorkflow, bootDurable } = require('./lib/standalone');
const { now, sleep, percentile, median } = require('./lib/util');
const { fmt } = require('./lib/scenarios');

const EMPTY = 'bench_scale_empty';
const BIG = 'bench_scale_big';
const SCHEMAS = [EMPTY, BIG];
const HISTORY = Number(process.env.BENCH_HISTORY || 5_000_000);
const DRAIN = Number(process.env.BENCH_SCALE_DRAIN || 20_000);
const IDLE_S = Number(process.env.BENCH_SCALE_IDLE_S || 60);
const ROUNDS = Number(process.env.BENCH_SCALE_ROUNDS || 10);
const PICKUP_SAMPLES = Number(process.env.BENCH_SCALE_PICKUP_SAMPLES || 10_000);
const WARMUP = 20;
const RESAMPLES = 2000;

let onRun = null;
const BenchScale = oneStepWorkflow('bench_scale', undefined, () => {
  if (onRun) onRun();
});
const q = (text, values) => withClient(URL, async (c) => (await c.query(text, values)).rows);
const sorted = (xs) => [...xs].sort((x, y) => x - y);

/** A worker node (at its defaults) on each schema, booted one after the other, keyed by schema. */
async function bootWorkers() {
  const nodes = {};
  for (const schema of SCHEMAS) nodes[schema] = await bootDurable({ schema, migrationsRun: false }, [BenchScale]);
  return nodes;
}
const closeAll = async (nodes) => {
  for (const n of Object.values(nodes)) await n.app.close();
};

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

/** An idle worker node's reads on each schema, both nodes up over the same IDLE_S. */
async function idleReads() {
  const nodes = await bootWorkers();
  await sleep(5_000); // boot and first beats
  // a backend's counters reach the shared statistics within ~10 s of its last transaction
  await sleep(11_000);
  const a = {};
  for (const schema of SCHEMAS) a[schema] = await reads(schema);
  await sleep(IDLE_S * 1000);
  await sleep(11_000);
  const out = {};
  const perMinute = (x) => (x * 60) / IDLE_S;
  for (const schema of SCHEMAS) {
    const b = await reads(schema);
    out[schema] = {
      perMinute: perMinute(b.tuples - a[schema].tuples),
      runsPerMinute: perMinute(b.runsTuples - a[schema].runsTuples),
      runsSeqScans: b.runsSeqScans - a[schema].runsSeqScans,
    };
  }
  await closeAll(nodes);
  return out;
}

/** Pickup latencies in pairs, one start on each schema's worker node per pair in a random order: [{ [EMPTY]: ms, [BIG]: ms }]. */
async function pickup() {
  for (const schema of SCHEMAS) await q(`VACUUM ANALYZE ${schema}.runs`);
  const nodes = await bootWorkers();
  const watcher = new Client({ connectionString: URL });
  await watcher.connect();
  await sleep(500);
  const one = async (schema, k) => {
    const t0 = now();
    const picked = new Promise((resolve) => (onRun = () => resolve(now())));
    const { runId } = await nodes[schema].durable.start(BenchScale, { k });
    const at = await picked;
    onRun = null;
    // its completion, outside the sample: read every millisecond on a connection of the bench's own
    while ((await watcher.query(`SELECT status FROM ${schema}.runs WHERE id = $1`, [runId])).rows[0].status !== 'completed') await sleep(1);
    await sleep(2);
    return at - t0;
  };
  const pairs = [];
  for (let k = -WARMUP; k < PICKUP_SAMPLES; k++) {
    const pair = {};
    for (const schema of Math.random() < 0.5 ? [EMPTY, BIG] : [BIG, EMPTY]) pair[schema] = await one(schema, k);
    if (k >= 0) pairs.push(pair);
    if (k > 0 && k % 250 === 0) console.error(`pickup: ${k} pairs`);
  }
  await watcher.end();
  for (const schema of SCHEMAS) await untilDrained(URL, schema, PICKUP_SAMPLES + WARMUP, { workflow: 'bench_scale' });
  await closeAll(nodes);
  for (const schema of SCHEMAS) await q(`DELETE FROM ${schema}.runs WHERE workflow = 'bench_scale'`); // the drain counts its own runs
  return pairs;
}

/** p50/p99 per schema, their ratios big ÷ empty with a 95% bootstrap interval (pairs resampled whole), and the spread of the per-pair ratios. */
function pickupFigures(pairs) {
  const at = (xs, p) => percentile(sorted(xs), p);
  const figures = (ps) => {
    const e = ps.map((p) => p[EMPTY]);
    const b = ps.map((p) => p[BIG]);
    return { e50: at(e, 50), b50: at(b, 50), e99: at(e, 99), b99: at(b, 99) };
  };
  const f = figures(pairs);
  const boot = { p50: [], p99: [] };
  for (let i = 0; i < RESAMPLES; i++) {
    const g = figures(Array.from(pairs, () => pairs[Math.floor(Math.random() * pairs.length)]));
    boot.p50.push(g.b50 / g.e50);
    boot.p99.push(g.b99 / g.e99);
  }
  const interval = (xs) => [at(xs, 2.5), at(xs, 97.5)];
  const ratios = sorted(pairs.map((p) => p[BIG] / p[EMPTY]));
  return {
    empty: { p50: f.e50, p99: f.e99 },
    big: { p50: f.b50, p99: f.b99 },
    p50: { ratio: f.b50 / f.e50, interval: interval(boot.p50) },
    p99: { ratio: f.b99 / f.e99, interval: interval(boot.p99) },
    pairs: {
      p10: percentile(ratios, 10),
      p50: percentile(ratios, 50),
      p90: percentile(ratios, 90),
      bigSlower: ratios.filter((r) => r > 1).length / ratios.length,
    },
  };
}

async function enqueue(schema, producer) {
  for (let left = DRAIN; left > 0; left -= 5000)
    await producer.startMany(
      BenchScale,
      Array.from({ length: Math.min(5000, left) }, (_, i) => ({ input: { i } })),
    );
}

/** One worker node at its defaults drains the schema's DRAIN pending runs: runs/s from its boot. */
async function drain(schema) {
  const t0 = Date.now();
  const { app } = await bootDurable({ schema, migrationsRun: false }, [BenchScale]);
  // every 5 ms, through the indexes of live runs: a count over the history would slow the drain it times
  const rate = (DRAIN / ((await untilDrained(URL, schema, DRAIN, { workflow: 'bench_scale', every: 5 })) - t0)) * 1000;
  await app.close();
  return rate;
}

/** A round: both backlogs enqueued and analysed, then the two drains back to back in `order`; the drained runs leave, the history stays. */
async function drainRound(r, order, producers) {
  for (const schema of order) await enqueue(schema, producers[schema].durable);
  for (const schema of order) await q(`ANALYZE ${schema}.runs`);
  const rates = {};
  for (const schema of order) rates[schema] = await drain(schema);
  for (const schema of SCHEMAS) {
    await q(`DELETE FROM ${schema}.runs WHERE workflow = 'bench_scale'`);
    await q(`VACUUM ${schema}.runs`);
  }
  const round = { order: order[0] === EMPTY ? 'empty first' : 'big first', empty: rates[EMPTY], big: rates[BIG], ratio: rates[BIG] / rates[EMPTY] };
  console.error(`drain round ${r} (${round.order}): ${fmt(round.empty)} / ${fmt(round.big)} runs/s, big ÷ empty ${round.ratio.toFixed(3)}`);
  return round;
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

/**
 * An interval for the median of sorted values: [xs[k-1], xs[n-k]] for the largest k whose coverage,
 * 1 − 2·P(Binomial(n, ½) < k), is still at least 95% (k = 1, min–max, when none is), and that coverage.
 */
function medianInterval(xs) {
  const n = xs.length;
  const below = (k) => {
    let p = 0;
    for (let i = 0, c = 1; i < k; c = (c * (n - i)) / (i + 1), i++) p += c;
    return p / 2 ** n;
  };
  let k = 1;
  while (k + 1 <= n / 2 && 1 - 2 * below(k + 1) >= 0.95) k++;
  return { lo: xs[k - 1], hi: xs[n - k], coverage: 1 - 2 * below(k) };
}

/** Where an interval of the ratio big ÷ empty lies against ±10%. */
const verdict = ([lo, hi]) => (lo >= 0.9 && hi <= 1.1 ? 'within 10%' : hi < 0.9 || lo > 1.1 ? 'beyond 10%' : 'not settled within 10%');

(async () => {
  const t0 = Date.now();
  const loadAtStart = require('os').loadavg()[0];
  const producers = {};
  for (const schema of SCHEMAS) {
    await q(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    producers[schema] = await bootDurable({ schema, worker: false }, [BenchScale]);
  }
  await addHistory(BIG);
  console.error(`idle node reads over ${IDLE_S} s, both schemas at once`);
  const idle = await idleReads();
  console.error(`idle: ${JSON.stringify(idle)}`);
  console.error(`pickup latency: ${fmt(PICKUP_SAMPLES)} starts per schema, interleaved`);
  const tp = Date.now();
  const pk = pickupFigures(await pickup());
  console.error(`pickup: ${Math.round((Date.now() - tp) / 1000)} s`);
  for (const schema of SCHEMAS) await q(`VACUUM ${schema}.runs`);
  console.error(`pickup: ${JSON.stringify(pk)}`);
  const rounds = [];
  for (let r = 1; r <= ROUNDS; r++) rounds.push(await drainRound(r, r % 2 ? [EMPTY, BIG] : [BIG, EMPTY], producers));
  const drainRatios = sorted(rounds.map((x) => x.ratio));
  const di = medianInterval(drainRatios);
  const drainInterval = [di.lo, di.hi];
  const cover = `${(di.coverage * 100).toFixed(di.coverage < 0.99 ? 0 : 1)}%`;
  const rate = { empty: median(sorted(rounds.map((x) => x.empty))), big: median(sorted(rounds.map((x) => x.big))) };
  const pct = (a, b) => `${b >= a ? '+' : ''}${(((b - a) / (a || 1)) * 100).toFixed(0)}%`;
  const r2 = (x) => x.toFixed(2);
  const r3 = (x) => x.toFixed(3);
  const row = (name, a, b, f, ratio = '') => `| ${name} | ${f(a)} | ${f(b)} | ${pct(a, b)} | ${ratio} |`;
  const within = (name, iv, how, settles = true) => `- ${name}: ${settles ? verdict(iv) : 'too few rounds to say'} (${how} ${r3(iv[0])}–${r3(iv[1])})`;
  console.log(
    [
      `\n| figure | empty history | ${fmt(HISTORY)} finished runs | change | big ÷ empty |`,
      '|---|---|---|---|---|',
      row(`idle node: tuples read per minute, all tables (${IDLE_S} s, both at once)`, idle[EMPTY].perMinute, idle[BIG].perMinute, fmt),
      row('idle node: tuples read per minute from runs', idle[EMPTY].runsPerMinute, idle[BIG].runsPerMinute, fmt),
      `| idle node: sequential scans of runs in ${IDLE_S} s | ${idle[EMPTY].runsSeqScans} | ${idle[BIG].runsSeqScans} | | |`,
      row(
        `pickup latency p50, ms (${fmt(PICKUP_SAMPLES)} interleaved starts each)`,
        pk.empty.p50,
        pk.big.p50,
        r2,
        `${r3(pk.p50.ratio)} (95%: ${r3(pk.p50.interval[0])}–${r3(pk.p50.interval[1])})`,
      ),
      row('pickup latency p99, ms', pk.empty.p99, pk.big.p99, r2, `${r3(pk.p99.ratio)} (95%: ${r3(pk.p99.interval[0])}–${r3(pk.p99.interval[1])})`),
      `| pickup latency, ratio within each pair | | | | median ${r3(pk.pairs.p50)} (p10–p90 ${r3(pk.pairs.p10)}–${r3(pk.pairs.p90)}); big slower in ${(pk.pairs.bigSlower * 100).toFixed(0)}% |`,
      row(
        `drain of ${fmt(DRAIN)} one-step runs, runs/s (median of ${ROUNDS} rounds)`,
        rate.empty,
        rate.big,
        fmt,
        `median of rounds ${r3(median(drainRatios))} (${cover}: ${r3(drainInterval[0])}–${r3(drainInterval[1])})`,
      ),
      '',
      within('pickup p50', pk.p50.interval, '95% interval'),
      within('pickup p99', pk.p99.interval, '95% interval'),
      within("drain, median of the rounds' ratios", drainInterval, `${cover} interval`, di.coverage >= 0.9),
      '',
      `drain rounds, empty / big runs/s: ${rounds.map((x) => `${fmt(x.empty)} / ${fmt(x.big)} (${x.order}, ${r3(x.ratio)})`).join('; ')}`,
      `load average ${loadAtStart.toFixed(2)} at start, ${require('os').loadavg()[0].toFixed(2)} at end; wall time ${Math.round((Date.now() - t0) / 1000)} s`,
    ].join('\n'),
  );
  for (const p of Object.values(producers)) await p.app.close();
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
