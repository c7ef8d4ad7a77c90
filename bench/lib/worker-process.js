'use strict';
// One worker process of bench/processes.js: a Nest application with DurableModule's worker at its
// defaults (BENCH_CONCURRENCY, BENCH_OURS_PREFETCH if given) on schema argv[2], running the one-step workflow
// `bench_proc`. Tells its parent "ready" once booted; exits on "stop".
const { oneStepWorkflow, bootDurable } = require('./standalone');
const { oursWorkerExtras } = require('./util');

const schema = process.argv[2];
const workerOptions = { ...(process.env.BENCH_CONCURRENCY ? { concurrency: Number(process.env.BENCH_CONCURRENCY) } : {}), ...oursWorkerExtras() };
const BenchProc = oneStepWorkflow('bench_proc');

bootDurable({ schema, migrationsRun: false, worker: workerOptions }, [BenchProc]).then(
  ({ app }) => {
    process.on('message', async (m) => {
      if (m !== 'stop') return;
      await app.close();
      process.exit(0);
    });
    process.send('ready');
  },
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
