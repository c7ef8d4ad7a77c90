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
  bulk: { title: 'Bulk start (startMany / addJobs / insert)', unit: 'runs/s', higher: true, target: '≥ 100,000' },
  p50: { title: 'Pickup latency p50 (idle worker)', unit: 'ms', higher: false, target: '≤ 1 ms' },
  p99: { title: 'Pickup latency p99 (idle worker)', unit: 'ms', higher: false, target: '≤ 5 ms' },
};

const sizes = () => ({
  drain: scaled(100000, 100),
  five: scaled(20000, 20),
  starts: scaled(10000, 32),
  latency: scaled(1000, 20),
  latencyPgboss: Math.min(scaled(1000, 20), Number(process.env.BENCH_PGBOSS_LATENCY_SAMPLES || 40)),
  batch: batch(),
});

/** Scenario groups, each run in its own child process. Returns { metric: [value per rep] }. */
const GROUPS = {
  // bulk is measured as the enqueue phase of the drain: the same 100k one-step runs, in batches.
  async drain(sys, want, onRep) {
    const s = sizes();
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
  async five(sys, want, onRep) {
    const s = sizes();
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
    const s = sizes();
    const out = { starts1: [], starts16: [] };
    for (let r = 1; r <= reps(); r++) {
      await sys.reset();
      out.starts1.push((s.starts / (await sys.starts(s.starts, 1))) * 1000);
      await sys.reset();
      out.starts16.push((s.starts / (await sys.starts(s.starts, 16))) * 1000);
      onRep(r, out, `${s.starts} starts: 1 caller ${fmt(out.starts1.at(-1))}/s, 16 callers ${fmt(out.starts16.at(-1))}/s`);
    }
    return out;
  },
  async latency(sys, want, onRep) {
    const s = sizes();
    const n = sys.name === 'pgboss' ? s.latencyPgboss : s.latency;
    const out = { p50: [], p99: [], samples: n };
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

const GROUP_OF = { drain: 'drain', bulk: 'drain', five: 'five', starts: 'starts', starts1: 'starts', starts16: 'starts', latency: 'latency', p50: 'latency', p99: 'latency' };

function fmt(x) { return Number.isFinite(x) ? Math.round(x).toLocaleString('en-US') : String(x); }

module.exports = { GROUPS, GROUP_OF, METRICS, sizes, reps, fmt, log };
