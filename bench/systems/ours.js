'use strict';
// nestjs-durable (this repository, built to dist/ by `npm run build` at the root).
require('reflect-metadata');
const { withClient, truncateSchema, analyzeSchema } = require('../lib/db');
const { now, sleep, until, Counter, Signal, timeoutMs, boxedDrain, batchedUntil, boxedCalls, workerConcurrency, oursWorkerExtras } = require('../lib/util');

const SCHEMA = process.env.BENCH_OURS_SCHEMA || 'bench_durable';

function loadLibrary() {
  try {
    // run.js snapshots dist/ at start (BENCH_OURS_LIB) so a rebuild during the run cannot change it under us
    return require(process.env.BENCH_OURS_LIB || 'nestjs-durable');
  } catch (e) {
    const err = new Error(`nestjs-durable is not built or does not load (run \`npm run build\` at the repo root): ${e.message}`);
    err.code = 'OURS_UNAVAILABLE';
    throw err;
  }
}

const done = new Counter();
const signal = new Signal();

/** Workflow classes written the way a plain-JS user would: decorators applied by hand. */
function defineWorkflows(lib) {
  const { Workflow, Step } = lib;
  const step = (cls, name) => {
    const desc = Object.getOwnPropertyDescriptor(cls.prototype, name);
    const out = Step()(cls.prototype, name, desc);
    if (out) Object.defineProperty(cls.prototype, name, out);
  };
  class BenchNoop {
    async run(ctx) {
      signal.fire(ctx.input.i);
      done.inc();
    }
  }
  step(BenchNoop, 'run');
  Workflow('bench_noop')(BenchNoop);

  class BenchFive {
    async s1() {}
    async s2() {}
    async s3() {}
    async s4() {}
    async s5() {
      done.inc();
    }
  }
  for (const s of ['s1', 's2', 's3', 's4', 's5']) step(BenchFive, s);
  Workflow('bench_five')(BenchFive);
  return { BenchNoop, BenchFive };
}

function create(url) {
  const lib = loadLibrary();
  const { Module } = require('@nestjs/common');
  const { NestFactory } = require('@nestjs/core');
  const { DurableModule, DurableService } = lib;
  const { BenchNoop, BenchFive } = defineWorkflows(lib);
  const concurrency = workerConcurrency();
  const { prefetch } = oursWorkerExtras();
  const describe = `worker concurrency ${concurrency}, pollInterval 1s${prefetch === undefined ? '' : `, prefetch ${prefetch}`}, startMany batches as given`;

  async function makeApp(worker) {
    class BenchModule {}
    Module({
      imports: [
        DurableModule.forRoot({
          url,
          schema: SCHEMA,
          worker: worker ? { concurrency, pollInterval: '1s', ...oursWorkerExtras() } : false,
          shutdownTimeout: '5s',
        }),
      ],
      providers: [BenchNoop, BenchFive],
    })(BenchModule);
    const app = await NestFactory.createApplicationContext(BenchModule, { logger: process.env.BENCH_OURS_LOG ? ['error', 'warn'] : false });
    return { app, durable: app.get(DurableService) };
  }

  let producer = null;
  const countOpen = (workflow) =>
    withClient(url, async (c) =>
      Number((await c.query(`select count(*)::int n from ${SCHEMA}.runs where workflow = $1 and status <> 'completed'`, [workflow])).rows[0].n),
    );

  function drain(workflow, target, boxMs, progressSql, unitsPerTarget = 1) {
    done.reset();
    return boxedDrain({
      target,
      boxMs,
      counter: done,
      unitsPerTarget,
      progress: () => withClient(url, async (c) => Number((await c.query(progressSql, [workflow])).rows[0].n)),
      start: () => makeApp(true),
      stop: ({ app }) => app.close(),
      complete: async (cancelled) => {
        await done.reach(target, timeoutMs(), 'ours: last steps begun');
        await until(async () => (await countOpen(workflow)) === 0, { every: 5, timeout: timeoutMs(), what: 'ours: all runs completed', cancelled });
      },
    });
  }

  const bulk = (cls, n, batch, deadline) =>
    batchedUntil(n, batch, deadline, async (from, to) => {
      const items = [];
      for (let j = from; j < to; j++) items.push({ input: { i: j } });
      const res = await producer.durable.startMany(cls, items);
      const bad = res.find((r) => r && r.error);
      if (bad) throw bad.error;
    });

  return {
    name: 'ours',
    describe,
    fiveStepModel: 'one run of a 5-step workflow (5 checkpoints per run)',
    async setup() {
      producer = await makeApp(false);
    },
    async reset() {
      await withClient(url, (c) => truncateSchema(c, SCHEMA, /migration/));
    },
    async analyze() {
      await withClient(url, (c) => analyzeSchema(c, SCHEMA));
    },
    enqueueNoop(n, batch, deadline) {
      return bulk(BenchNoop, n, batch, deadline);
    },
    drainNoop(n, boxMs) {
      return drain('bench_noop', n, boxMs, `select count(*)::int n from ${SCHEMA}.runs where workflow = $1 and status = 'completed'`);
    },
    enqueueFive(n, batch, deadline) {
      return bulk(BenchFive, n, batch, deadline);
    },
    // the run's cursor is the number of checkpointed steps
    drainFive(n, boxMs) {
      return drain('bench_five', n, boxMs, `select coalesce(sum(step), 0)::int n from ${SCHEMA}.runs where workflow = $1`, 5);
    },
    starts(n, callers, boxMs) {
      return boxedCalls(n, callers, boxMs, (i) => producer.durable.start(BenchNoop, { i }));
    },
    async latency(samples, warmup, gapMs) {
      const worker = await makeApp(true);
      // BENCH_OURS_LATENCY_FROM=producer: started on a node without a worker (woken by NOTIFY, then
      // claimed), instead of on the worker's own node (claimed in the start's own statement)
      const starter = process.env.BENCH_OURS_LATENCY_FROM === 'producer' ? producer : worker;
      try {
        await sleep(200);
        const out = [];
        for (let k = -warmup; k < samples; k++) {
          const p = signal.arm(k);
          const t0 = now();
          await starter.durable.start(BenchNoop, { i: k });
          const at = await Promise.race([
            p,
            sleep(5000).then(() => {
              throw new Error('pickup timeout');
            }),
          ]);
          if (k >= 0) out.push(at - t0);
          await sleep(gapMs);
        }
        return out;
      } finally {
        await worker.app.close();
      }
    },
    async teardown() {
      if (producer) await producer.app.close();
    },
  };
}

module.exports = { create, variants: ['ours'], SCHEMA };
