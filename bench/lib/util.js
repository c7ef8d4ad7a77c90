'use strict';
const { performance } = require('perf_hooks');

const now = () => performance.now();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const scale = () => Number(process.env.BENCH_SCALE || 1);
const scaled = (n, min = 1) => Math.max(min, Math.round(n * scale()));

function log(...args) {
  const t = new Date().toISOString().slice(11, 19);
  process.stderr.write(`[${t}] ${args.join(' ')}\n`);
}

function percentile(sorted, p) {
  if (!sorted.length) return NaN;
  const idx = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[idx];
}

function summarize(values) {
  const v = values.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (!v.length) return null;
  return { median: median(v), min: v[0], max: v[v.length - 1], n: v.length, all: values };
}
function median(sorted) {
  const m = sorted.length >> 1;
  return sorted.length % 2 ? sorted[m] : (sorted[m - 1] + sorted[m]) / 2;
}

/** Resolve when cond() is truthy, polling every `every` ms; reject after timeout ms; give up quietly once cancelled(). */
async function until(cond, { every = 5, timeout = 120000, what = 'condition', cancelled = () => false } = {}) {
  const t0 = now();
  for (;;) {
    if (cancelled()) return;
    if (await cond()) return;
    if (now() - t0 > timeout) throw new Error(`timeout after ${timeout} ms waiting for ${what}`);
    await sleep(every);
  }
}

/** A counter whose waiters resolve when it reaches a target. */
class Counter {
  constructor() {
    this.n = 0;
    this.waiters = [];
    this.firstAt = 0;
  }
  inc(k = 1) {
    if (this.n === 0) this.firstAt = now();
    this.n += k;
    if (this.waiters.length) {
      this.waiters = this.waiters.filter((w) => {
        if (this.n >= w.target) {
          w.resolve();
          return false;
        }
        return true;
      });
    }
  }
  reset() {
    this.n = 0;
    this.waiters = [];
    this.firstAt = 0;
  }
  reach(target, timeout = 120000, what = 'counter') {
    if (this.n >= target) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`timeout after ${timeout} ms: ${what} at ${this.n}/${target}`)), timeout);
      this.waiters.push({
        target,
        resolve: () => {
          clearTimeout(t);
          resolve();
        },
      });
    });
  }
}

/** A one-shot signal used for sequential latency samples. */
class Signal {
  constructor() {
    this.expect = null;
    this.resolve = null;
    this.at = 0;
  }
  arm(tag) {
    this.expect = tag;
    return new Promise((r) => {
      this.resolve = r;
    });
  }
  fire(tag) {
    if (this.expect !== null && tag === this.expect) {
      const r = this.resolve;
      this.expect = null;
      this.resolve = null;
      r(now());
    }
  }
}

/**
 * Time-boxed drain: start the worker, wait until complete() resolves or boxMs passes. When the box
 * ends first, progress() counts the units done so far and the rate is taken over that part.
 * complete(cancelled) must stop polling once cancelled() is true.
 */
async function boxedDrain({ start, stop, complete, progress, target, boxMs, counter, unitsPerTarget = 1 }) {
  let boxed = false;
  const t0 = now();
  const handle = await start();
  try {
    let timer;
    const box = new Promise((r) => {
      timer = setTimeout(() => {
        boxed = true;
        r('box');
      }, boxMs);
    });
    const done = complete(() => boxed).then(() => 'done');
    const first = await Promise.race([done, box]);
    clearTimeout(timer);
    const startupMs = counter && counter.firstAt ? counter.firstAt - t0 : undefined;
    if (first === 'done' && !boxed) return { ms: now() - t0, units: target * unitsPerTarget, boxed: false, startupMs };
    boxed = true;
    const a = now();
    const units = await progress();
    return { ms: (a + now()) / 2 - t0, units, boxed: true, startupMs };
  } finally {
    await stop(handle);
  }
}

/** Enqueue in batches until n are in or the deadline (ms, on now()'s clock) passes. */
async function batchedUntil(n, batch, deadline, addBatch) {
  const t0 = now();
  let i = 0;
  while (i < n && (i === 0 || now() < deadline)) {
    const end = Math.min(n, i + batch);
    await addBatch(i, end);
    i = end;
  }
  return { ms: now() - t0, n: i };
}

/** callers concurrent loops calling one(i) until n calls were made or boxMs passed. */
async function boxedCalls(n, callers, boxMs, one) {
  let next = 0;
  let done = 0;
  const t0 = now();
  const end = t0 + boxMs;
  await Promise.all(
    Array.from({ length: callers }, async () => {
      while (next < n && now() < end) {
        const i = next++;
        await one(i);
        done++;
      }
    }),
  );
  return { ms: now() - t0, units: done, boxed: done < n };
}

const timeoutMs = () => Number(process.env.BENCH_TIMEOUT_MS || 180000);
/** Handlers running at once per worker process, the same for every system that has the setting (nestjs-durable's default: 10). */
const workerConcurrency = () => Number(process.env.BENCH_CONCURRENCY || 10);
/** nestjs-durable's worker options beyond the concurrency: `prefetch` when BENCH_OURS_PREFETCH is set (else its default). */
const oursWorkerExtras = () => (process.env.BENCH_OURS_PREFETCH ? { prefetch: Number(process.env.BENCH_OURS_PREFETCH) } : {});

module.exports = {
  now,
  sleep,
  scale,
  scaled,
  log,
  percentile,
  summarize,
  median,
  until,
  Counter,
  Signal,
  timeoutMs,
  boxedDrain,
  batchedUntil,
  boxedCalls,
  workerConcurrency,
  oursWorkerExtras,
};
