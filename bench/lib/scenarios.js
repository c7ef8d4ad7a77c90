'use strict';
// The work each system is given. Counts scale with BENCH_SCALE; every figure is taken BENCH_REPS times.
const { scaled, percentile, log } = require('./util');

const reps = () => Number(process.env.BENCH_REPS || 3);
const batch = () => Number(process.env.BENCH_BATCH || 5000);

const METRICS = {
  drain: { title: 'One-step no-op runs drained', unit: 'runs/s', higher: true, target: '≥ 40,000' },
  five: { title: 'Five-step runs: step checkpoints', unit: 'checkpoints/s', higher: true, target: '≥ 20,000' },
  starts1: { title: 'Starts, 1 caller', unit: 'starts/s', higher: true, target: '≥ 5,000' },
  starts16: { title: 'Starts, 16 concurrent callers', unit: 'starts/s', higher: true, target: '≥ 20,000' },
  starts1n: { title: 'Starts + pg_notify in the same transaction, 1 caller', unit: 'starts/s', higher: true, target: '(reference)' },
  starts16n: { title: 'Starts + pg_notify in the same transaction, 16 callers', unit: 'starts/s', higher: true, target: '(reference)' },
  bulk: { title: 'Bulk start (startMany / addJobs / insert)', unit: 'runs/s', higher: true, target: '≥ 100,000' },
  p50: { title: 'Pickup latency p50 (idle worker)', unit: 'ms', higher: false, target: '≤ 1 ms' },
  p99: { title: 'Pickup latency p99 (idle worker)', unit: 'ms', higher: false, target: '≤ 5 ms' },
};

const sizes = () => ({
  drain: scaled(100000, 100),
  five: scaled(20000, 20),
  starts: scaled(Number(process.env.BENCH_STARTS || 4000), 32),
  latency: scaled(1000, 20),
  batch: batch(),
});

// Per-system caps that keep the whole run inside 10 minutes on 2 cores; each is printed with the table.
// A rate measured on fewer items is still a rate; the caps only bite where a system is slow at that work.
const CAPS = {
  'graphile-default': { drain: Number(process.env.BENCH_GRAPHILE_DEFAULT_DRAIN || 20000) },
  graphile: { five: Number(process.env.BENCH_GRAPHILE_FIVE || 3000) },
  pgboss: { latency: Number(process.env.BENCH_PGBOSS_LATENCY_SAMPLES || 40) },
  raw: { five: Number(process.env.BENCH_RAW_FIVE || 5000) },
};
function sizesFor(name) {
  const s = sizes();
  const c = CAPS[name] || {};
  for (const k of Object.keys(c)) if (Number.isFinite(c[k]) && c[k] > 0) s[k] = Math.min(s[k], Math.max(20, Math.round(c[k] * Math.min(1, Number(process.env.BENCH_SCALE || 1)))));
  return s;
}

/** Scenario groups, each run in its own child process. Returns { metric: [value per rep] }. */
const GROUPS = {
  // bulk is measured as the enqueue phase of the drain: the same 100k one-step runs, in batches.
  async drain(sys, want, onRep) {
    const s = sizesFor(sys.name);
    const out = { bulk: [], drain: [] };
    for (let r = 1; r <= reps(); r++) {
      await sys.reset();
      const enq = await sys.enqueueNoop(s.drain, s.batch);
      out.bulk.push((s.drain / enq) * 1000);
      if (want.has('drain')) {
        await sys.analyze();
        const ms = await sys.drainNoop(s.drain);
        out.drain.push((s.drain / ms) * 1000);
      }
      onRep(r, out, `${s.drain} runs: enqueue ${fmt(out.bulk.at(-1))}/s${want.has('drain') ? `, drain ${fmt(out.drain.at(-1))}/s` : ''}`);
    }
    if (!want.has('drain')) delete out.drain;
    if (!want.has('bulk')) delete out.bulk;
    return out;
  },
  // Used by profile.js: enqueue in one process, drain in another (the profiled one).
  async enqueue(sys, want, onRep) {
    const n = Number(process.env.BENCH_PROFILE_N || sizes().drain);
    await sys.reset();
    const ms = await sys.enqueueNoop(n, sizes().batch);
    await sys.analyze();
    onRep(1, {}, `${n} runs enqueued in ${Math.round(ms)} ms`);
    return { n, enqueueMs: ms };
  },
  async drainonly(sys, want, onRep) {
    const n = Number(process.env.BENCH_PROFILE_N || sizes().drain);
    const hrStart = String(process.hrtime.bigint() / 1000n);
    const ms = await sys.drainNoop(n);
    const hrEnd = String(process.hrtime.bigint() / 1000n);
    onRep(1, {}, `${n} runs drained in ${Math.round(ms)} ms: ${fmt((n / ms) * 1000)}/s`);
    return { n, drainMs: ms, rate: (n / ms) * 1000, hrStart, hrEnd };
  },
  async five(sys, want, onRep) {
    const s = sizesFor(sys.name);
    const out = { five: [] };
    for (let r = 1; r <= reps(); r++) {
      await sys.reset();
      await sys.enqueueFive(s.five, s.batch);
      await sys.analyze();
      const ms = await sys.drainFive(s.five);
      out.five.push(((s.five * 5) / ms) * 1000);
      onRep(r, out, `${s.five} five-step runs: ${fmt(out.five.at(-1))} checkpoints/s`);
    }
    return out;
  },
  async starts(sys, want, onRep) {
    const s = sizesFor(sys.name);
    const out = { starts1: [], starts16: [] };
    for (let r = 1; r <= reps(); r++) {
      await sys.reset();
      out.starts1.push((s.starts / (await sys.starts(s.starts, 1))) * 1000);
      await sys.reset();
      out.starts16.push((s.starts / (await sys.starts(s.starts, 16))) * 1000);
      if (sys.startsNotify) {
        await sys.reset();
        (out.starts1n = out.starts1n || []).push((s.starts / (await sys.startsNotify(s.starts, 1))) * 1000);
        await sys.reset();
        (out.starts16n = out.starts16n || []).push((s.starts / (await sys.startsNotify(s.starts, 16))) * 1000);
      }
      onRep(r, out, `${s.starts} starts: 1 caller ${fmt(out.starts1.at(-1))}/s, 16 callers ${fmt(out.starts16.at(-1))}/s`);
    }
    return out;
  },
  async latency(sys, want, onRep) {
    const s = sizesFor(sys.name);
    const n = s.latency;
    const out = { p50: [], p99: [] };
    for (let r = 1; r <= reps(); r++) {
      await sys.reset();
      const v = (await sys.latency(n, 20, Number(process.env.BENCH_LATENCY_GAP_MS || 3))).sort((a, b) => a - b);
      out.p50.push(percentile(v, 50));
      out.p99.push(percentile(v, 99));
      onRep(r, out, `${n} sequential samples: p50 ${out.p50.at(-1).toFixed(2)} ms, p99 ${out.p99.at(-1).toFixed(2)} ms`);
    }
    return out;
  },
};

const GROUP_OF = { drain: 'drain', bulk: 'drain', five: 'five', starts: 'starts', starts1: 'starts', starts16: 'starts', starts1n: 'starts', starts16n: 'starts', latency: 'latency', p50: 'latency', p99: 'latency' };

function fmt(x) { return Number.isFinite(x) ? Math.round(x).toLocaleString('en-US') : String(x); }

module.exports = { GROUPS, GROUP_OF, METRICS, sizes, sizesFor, reps, fmt, log };
