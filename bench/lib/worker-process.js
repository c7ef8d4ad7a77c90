'use strict';
// One worker process of bench/processes.js: a Nest application with DurableModule's worker at its
// defaults (BENCH_CONCURRENCY if given) on schema argv[2], running the one-step workflow
// `bench_proc`. Tells its parent "ready" once booted; exits on "stop".
const { oneStepWorkflow, bootDurable } = require('./standalone');

const schema = process.argv[2];
const concurrency = process.env.BENCH_CONCURRENCY ? { concurrency: Number(process.env.BENCH_CONCURRENCY) } : {};
const BenchProc = oneStepWorkflow('bench_proc');

bootDurable({ schema, migrationsRun: false, worker: concurrency }, [BenchProc]).then(
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
