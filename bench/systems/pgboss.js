'use strict';
// pg-boss 10.4.2: `work` with batchSize and the minimum polling interval (0.5 s). A pg-boss worker is a
// fetch -> handler -> complete loop that sleeps for the rest of its polling interval, so throughput
// comes from several workers and large batches.
const PgBoss = require('pg-boss');
const { withClient, truncateSchema, analyzeSchema } = require('../lib/db');
const { now, sleep, until, Counter, Signal, timeoutMs, boxedDrain, batchedUntil, boxedCalls } = require('../lib/util');

const SCHEMA = 'bench_pgboss';

function create(url) {
  const workers = Number(process.env.BENCH_PGBOSS_WORKERS || 2);
  const batchSize = Number(process.env.BENCH_PGBOSS_BATCH || 5000);
  const polling = Number(process.env.BENCH_PGBOSS_POLL || 0.5);
  const describe = `${workers} workers x batchSize ${batchSize}, pollingIntervalSeconds ${polling}`;
  const bossOpts = (max) => ({ connectionString: url, schema: SCHEMA, max, supervise: false, schedule: false, migrate: true });
  let producer = null;
  const done = new Counter();
  const signal = new Signal();

  const count = (queue, where) =>
    withClient(url, async (c) => Number((await c.query(`select count(*)::int n from ${SCHEMA}.job where name = $1 and ${where}`, [queue])).rows[0].n));

  async function startWorker(queue, handler, opts = {}) {
    const boss = new PgBoss(bossOpts(opts.max || 6));
    boss.on('error', (e) => process.stderr.write(`pg-boss error: ${e.message}\n`));
    await boss.start();
    for (let w = 0; w < (opts.workers || workers); w++) {
      await boss.work(queue, { batchSize: opts.batchSize || batchSize, pollingIntervalSeconds: polling }, handler);
    }
    return boss;
  }

  function drain(queue, target, boxMs, handler, unitsPerTarget = 1) {
    done.reset();
    return boxedDrain({
      target,
      boxMs,
      counter: done,
      unitsPerTarget,
      // every chained job is its own row, so completed rows are the checkpoints (or the one-step runs)
      progress: () => count(queue, `state = 'completed'`),
      start: () => startWorker(queue, handler),
      stop: (boss) => boss.stop({ graceful: false, wait: true, close: true }).catch(() => {}),
      complete: async (cancelled) => {
        await done.reach(target, timeoutMs(), 'pg-boss handlers');
        await until(async () => (await count(queue, `state <> 'completed'`)) === 0, {
          every: 5,
          timeout: timeoutMs(),
          what: 'pg-boss all completed',
          cancelled,
        });
      },
    });
  }

  const bulkInsert = (n, batch, deadline, spec) =>
    batchedUntil(n, batch, deadline, async (from, to) => {
      const jobs = [];
      for (let j = from; j < to; j++) jobs.push(spec(j));
      await producer.insert(jobs);
    });

  return {
    name: 'pgboss',
    describe,
    fiveStepModel: '5 chained jobs (each batch inserts the next jobs with one insert)',
    async setup() {
      producer = new PgBoss(bossOpts(10));
      producer.on('error', (e) => process.stderr.write(`pg-boss error: ${e.message}\n`));
      await producer.start();
      for (const q of ['bench_noop', 'bench_five']) {
        if (!(await producer.getQueue(q))) await producer.createQueue(q, { retryLimit: 0 });
      }
    },
    async reset() {
      await withClient(url, (c) => truncateSchema(c, SCHEMA, /^(version|queue|schedule|subscription)$/));
    },
    async analyze() {
      await withClient(url, (c) => analyzeSchema(c, SCHEMA));
    },
    enqueueNoop(n, batch, deadline) {
      return bulkInsert(n, batch, deadline, (i) => ({ name: 'bench_noop', data: { i } }));
    },
    drainNoop(n, boxMs) {
      return drain('bench_noop', n, boxMs, async (jobs) => {
        done.inc(jobs.length);
      });
    },
    enqueueFive(n, batch, deadline) {
      return bulkInsert(n, batch, deadline, (i) => ({ name: 'bench_five', data: { i, s: 0 } }));
    },
    drainFive(n, boxMs) {
      return drain(
        'bench_five',
        n,
        boxMs,
        async (jobs) => {
          const next = [];
          let finished = 0;
          for (const j of jobs) {
            if (j.data.s < 4) next.push({ name: 'bench_five', data: { i: j.data.i, s: j.data.s + 1 } });
            else finished++;
          }
          if (next.length) await producer.insert(next);
          done.inc(finished);
        },
        5,
      );
    },
    starts(n, callers, boxMs) {
      return boxedCalls(n, callers, boxMs, (i) => producer.send('bench_noop', { i }));
    },
    async latency(samples, warmup, gapMs) {
      const boss = await startWorker(
        'bench_noop',
        async (jobs) => {
          for (const j of jobs) signal.fire(j.data.i);
        },
        { workers: 1, batchSize: 1, max: 3 },
      );
      try {
        await sleep(200);
        const out = [];
        for (let k = -Math.min(warmup, 3); k < samples; k++) {
          const p = signal.arm(k);
          const t0 = now();
          await producer.send('bench_noop', { i: k });
          const at = await Promise.race([
            p,
            sleep(10000).then(() => {
              throw new Error('pickup timeout');
            }),
          ]);
          if (k >= 0) out.push(at - t0);
          // a pg-boss worker sleeps a full polling interval after each batch; a random gap samples its phase
          await sleep(gapMs + Math.random() * polling * 1000);
        }
        return out;
      } finally {
        await boss.stop({ graceful: false, wait: true, close: true }).catch(() => {});
      }
    },
    async teardown() {
      if (producer) await producer.stop({ graceful: false, wait: true, close: true }).catch(() => {});
    },
  };
}

module.exports = { create, variants: ['pgboss'] };
