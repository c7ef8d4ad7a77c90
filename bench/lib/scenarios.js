'use strict';
// The work each system is given. Counts scale with BENCH_SCALE; every figure is taken BENCH_REPS times.
const { scaled, percentile, log, now } = require('./util');

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
  pgboss: { latency: Number(process.env.BENCH_PGBOSS_LATENCY_SAMPLES || 30) },
  raw: { five: Number(process.env.BENCH_RAW_FIVE || 5000) },
};
function sizesFor(name) {
  const s = sizes();
  const c = CAPS[name] || {};
  for (const k of Object.keys(c))
    if (Number.isFinite(c[k]) && c[k] > 0) s[k] = Math.min(s[k], Math.max(20, Math.round(c[k] * Math.min(1, Number(process.env.BENCH_SCALE || 1)))));
  return s;
}

const boxMs = () => Number(process.env.BENCH_BOX_S || 10) * 1000;
const enqueueBoxMs = () => Number(process.env.BENCH_ENQUEUE_BOX_S || 6) * 1000;
const startsBoxMs = () => Number(process.env.BENCH_STARTS_BOX_S || 3) * 1000;

/**
 * Scenario groups, each run in its own child process. Returns { metric: [value per rep], meta: { metric: [{ units, of, boxed }] } }.
 * Every phase is time-boxed (BENCH_ENQUEUE_BOX_S, BENCH_BOX_S, BENCH_STARTS_BOX_S) so a slow system cannot blow
 * the 10-minute budget: the rate is then taken over the part done inside the box, and the notes say so.
 */
const GROUPS = {
  // bulk is measured as the enqueue phase of the drain: the same one-step runs, in batches.
  async drain(sys, want, onRep) {
    const s = sizesFor(sys.name);
    const out = { bulk: [], drain: [], meta: { bulk: [], drain: [] } };
    for (let r = 1; r <= reps(); r++) {
      await sys.reset();
      const enq = await sys.enqueueNoop(s.drain, s.batch, now() + enqueueBoxMs());
      out.bulk.push((enq.n / enq.ms) * 1000);
      out.meta.bulk.push({ units: enq.n, of: s.drain, boxed: enq.n < s.drain });
      let msg = `enqueued ${fmt(enq.n)} at ${fmt(out.bulk.at(-1))}/s`;
      if (want.has('drain')) {
        await sys.analyze();
        const d = await sys.drainNoop(enq.n, boxMs());
        out.drain.push((d.units / d.ms) * 1000);
        out.meta.drain.push({ units: d.units, of: enq.n, boxed: d.boxed, startupMs: d.startupMs });
        msg += `; drained ${fmt(d.units)}${d.boxed ? ' (time box)' : ''} at ${fmt(out.drain.at(-1))}/s`;
      }
      onRep(r, out, msg);
    }
    if (!want.has('drain')) {
      delete out.drain;
      delete out.meta.drain;
    }
    if (!want.has('bulk')) {
      delete out.bulk;
      delete out.meta.bulk;
    }
    return out;
  },
  // Used by profile.js: enqueue in one process, drain in another (the profiled one).
  async enqueue(sys, want, onRep) {
    const n = Number(process.env.BENCH_PROFILE_N || sizes().drain);
    await sys.reset();
    const enq = await sys.enqueueNoop(n, sizes().batch, Infinity);
    await sys.analyze();
    onRep(1, {}, `${enq.n} runs enqueued in ${Math.round(enq.ms)} ms`);
    return { n: enq.n, enqueueMs: enq.ms };
  },
  async drainonly(sys, want, onRep) {
    const n = Number(process.env.BENCH_PROFILE_N || sizes().drain);
    const hrStart = String(process.hrtime.bigint() / 1000n);
    const d = await sys.drainNoop(n, Number(process.env.BENCH_PROFILE_BOX_S || 600) * 1000);
    const hrEnd = String(process.hrtime.bigint() / 1000n);
    const rate = (d.units / d.ms) * 1000;
    onRep(1, {}, `${d.units} runs drained in ${Math.round(d.ms)} ms: ${fmt(rate)}/s`);
    return { n: d.units, drainMs: d.ms, rate, hrStart, hrEnd };
  },
  async five(sys, want, onRep) {
    const s = sizesFor(sys.name);
    const out = { five: [], meta: { five: [] } };
    for (let r = 1; r <= reps(); r++) {
      await sys.reset();
      const enq = await sys.enqueueFive(s.five, s.batch, now() + enqueueBoxMs());
      await sys.analyze();
      const d = await sys.drainFive(enq.n, boxMs());
      out.five.push((d.units / d.ms) * 1000);
      out.meta.five.push({ units: d.units, of: enq.n * 5, boxed: d.boxed });
      onRep(r, out, `${fmt(enq.n)} five-step runs: ${fmt(d.units)} checkpoints${d.boxed ? ' (time box)' : ''} at ${fmt(out.five.at(-1))}/s`);
    }
    return out;
  },
  async starts(sys, want, onRep) {
    const s = sizesFor(sys.name);
    const out = { starts1: [], starts16: [], meta: { starts1: [], starts16: [] } };
    const one = async (key, fn, callers) => {
      await sys.reset();
      const x = await fn(s.starts, callers, startsBoxMs());
      (out[key] = out[key] || []).push((x.units / x.ms) * 1000);
      (out.meta[key] = out.meta[key] || []).push({ units: x.units, of: s.starts, boxed: x.boxed });
    };
    for (let r = 1; r <= reps(); r++) {
      await one('starts1', sys.starts.bind(sys), 1);
      await one('starts16', sys.starts.bind(sys), 16);
      if (sys.startsNotify) {
        await one('starts1n', sys.startsNotify.bind(sys), 1);
        await one('starts16n', sys.startsNotify.bind(sys), 16);
      }
      onRep(
        r,
        out,
        `1 caller ${fmt(out.starts1.at(-1))}/s, 16 callers ${fmt(out.starts16.at(-1))}/s${sys.startsNotify ? `; with pg_notify ${fmt(out.starts1n.at(-1))}/s, ${fmt(out.starts16n.at(-1))}/s` : ''}`,
      );
    }
    return out;
  },
  async latency(sys, want, onRep) {
    const s = sizesFor(sys.name);
    const n = s.latency;
    const out = { p50: [], p99: [] };
    for (let r = 1; r <= reps(); r++) {
      await sys.reset();
      const v = (await sys.latency(n, 20, Number(process.env.BENCH_LATENCY_GAP_MS || 2))).sort((a, b) => a - b);
      out.p50.push(percentile(v, 50));
      out.p99.push(percentile(v, 99));
      onRep(r, out, `${n} sequential samples: p50 ${out.p50.at(-1).toFixed(2)} ms, p99 ${out.p99.at(-1).toFixed(2)} ms`);
    }
    return out;
  },
};

const GROUP_OF = {
  drain: 'drain',
  bulk: 'drain',
  five: 'five',
  starts: 'starts',
  starts1: 'starts',
  starts16: 'starts',
  starts1n: 'starts',
  starts16n: 'starts',
  latency: 'latency',
  p50: 'latency',
  p99: 'latency',
};

function fmt(x) {
  return Number.isFinite(x) ? Math.round(x).toLocaleString('en-US') : String(x);
}

module.exports = { GROUPS, GROUP_OF, METRICS, sizes, sizesFor, reps, fmt, log, boxMs, enqueueBoxMs, startsBoxMs };
