'use strict';
// graphile-worker 0.17.3. Two configurations:
//   graphile          local queue + batched completion (the fastest documented setup)
//   graphile-default  out of the box: each worker fetches one job and completes it in its own statement
const { run, makeWorkerUtils, Logger } = require('graphile-worker');
const { withClient, truncateSchema, analyzeSchema } = require('../lib/db');
const { now, sleep, until, Counter, Signal, timeoutMs, boxedDrain, batchedUntil, boxedCalls, workerConcurrency } = require('../lib/util');

const SCHEMA = 'bench_graphile';
const logger = new Logger(() => () => {});

function create(url, variant) {
  const batched = variant === 'graphile';
  const concurrency = workerConcurrency();
  const localQueueSize = Number(process.env.BENCH_GRAPHILE_LOCAL_QUEUE || 1000);
  const preset = batched ? { worker: { localQueue: { size: localQueueSize }, completeJobBatchDelay: 0, failJobBatchDelay: 0 } } : { worker: {} };
  const describe = batched
    ? `concurrency ${concurrency}, localQueue.size ${localQueueSize}, completeJobBatchDelay 0, failJobBatchDelay 0, pollInterval 1000 ms`
    : `concurrency ${concurrency}, no local queue, unbatched completion, pollInterval 1000 ms`;

  let utils = null;
  const done = new Counter(); // runs finished (one-step job, or the 5th job of a chain)
  const checkpoints = new Counter(); // five-step: jobs whose handler returned
  const signal = new Signal();
  const taskList = {
    bench_noop: async (payload) => {
      signal.fire(payload.i);
      done.inc();
      checkpoints.inc();
    },
    bench_five: async (payload, helpers) => {
      if (payload.s < 4) await helpers.addJob('bench_five', { i: payload.i, s: payload.s + 1 }, { maxAttempts: 1 });
      else done.inc();
      checkpoints.inc();
    },
  };
  const workerOpts = () => ({
    connectionString: url,
    schema: SCHEMA,
    concurrency,
    pollInterval: 1000,
    noHandleSignals: true,
    // a connection per handler, up to 50 (the local server allows 100 in all)
    maxPoolSize: Math.min(concurrency + 2, 50),
    taskList,
    logger,
    preset,
  });
  const countLeft = () => withClient(url, async (c) => Number((await c.query(`select count(*)::int n from ${SCHEMA}._private_jobs`)).rows[0].n));

  function drain(target, boxMs, progress, unitsPerTarget = 1) {
    done.reset();
    checkpoints.reset();
    return boxedDrain({
      target,
      boxMs,
      counter: checkpoints,
      progress,
      unitsPerTarget,
      start: () => run(workerOpts()),
      stop: (runner) => runner.stop(),
      complete: async (cancelled) => {
        await done.reach(target, timeoutMs(), 'graphile handlers');
        await until(async () => (await countLeft()) === 0, { every: 5, timeout: timeoutMs(), what: 'graphile queue empty', cancelled });
      },
    });
  }

  const bulkAdd = (n, batch, deadline, spec) =>
    batchedUntil(n, batch, deadline, async (from, to) => {
      const jobs = [];
      for (let j = from; j < to; j++) jobs.push(spec(j));
      await utils.addJobs(jobs);
    });

  return {
    name: variant,
    describe,
    fiveStepModel: '5 chained jobs (each job adds the next from its handler)',
    async setup() {
      utils = await makeWorkerUtils({ connectionString: url, schema: SCHEMA, logger, maxPoolSize: 17 });
      await utils.migrate();
      await utils.addJob('bench_noop', { i: -1 }); // registers the task identifiers once
      await utils.addJob('bench_five', { i: -1, s: 4 });
    },
    async reset() {
      await withClient(url, (c) => truncateSchema(c, SCHEMA, /^(migrations|_private_tasks|_private_known_crontabs)$/));
    },
    async analyze() {
      await withClient(url, (c) => analyzeSchema(c, SCHEMA));
    },
    enqueueNoop(n, batch, deadline) {
      return bulkAdd(n, batch, deadline, (i) => ({ identifier: 'bench_noop', payload: { i }, maxAttempts: 1 }));
    },
    drainNoop(n, boxMs) {
      return drain(n, boxMs, async () => n - (await countLeft()));
    },
    enqueueFive(n, batch, deadline) {
      return bulkAdd(n, batch, deadline, (i) => ({ identifier: 'bench_five', payload: { i, s: 0 }, maxAttempts: 1 }));
    },
    // completed jobs are deleted, so the chain's progress is counted in the handlers
    drainFive(n, boxMs) {
      return drain(n, boxMs, async () => checkpoints.n, 5);
    },
    starts(n, callers, boxMs) {
      return boxedCalls(n, callers, boxMs, (i) => utils.addJob('bench_noop', { i }, { maxAttempts: 1 }));
    },
    async latency(samples, warmup, gapMs) {
      const runner = await run(workerOpts());
      try {
        await sleep(200);
        const out = [];
        for (let k = -warmup; k < samples; k++) {
          const p = signal.arm(k);
          const t0 = now();
          await utils.addJob('bench_noop', { i: k }, { maxAttempts: 1 });
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
        await runner.stop();
      }
    },
    async teardown() {
      if (utils) await utils.release();
    },
  };
}

module.exports = { create, variants: ['graphile', 'graphile-default'] };
