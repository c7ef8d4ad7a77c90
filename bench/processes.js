'use strict';
// The one-step drain by 1, 2 and 4 worker processes on one Postgres (standalone; `npm run build` at
// the root first):
//
//   node bench/processes.js      # BENCH_PROCESSES=1,2,4  BENCH_PROCESSES_N=60000  BENCH_REPS=3
//   BENCH_KEYED=alternate node bench/processes.js   # keyed and unkeyed runs, drain by drain
//
// For each process count: N one-step runs are started due in an hour (runAt) (startMany, batches of 5,000),
// the worker processes boot (each a Nest app with the worker at its defaults, concurrency 10, or
// BENCH_CONCURRENCY), and once all are ready one UPDATE makes every run due and wakes them. Timed from
// that commit until the database shows every run completed. BENCH_KEYED=1: each run has a key of its
// own (it holds its key until it ends); BENCH_KEYED=alternate: each repetition drains unkeyed runs,
// then keyed ones, and the table has a row for each. Also prints Postgres' own CPU share
// (from /proc) during the drain, to tell where the limit is. Schema `bench_processes` (dropped first).
const { fork } = require('child_process');
const fs = require('fs');
const path = require('path');
const { withClient, untilDrained } = require('./lib/db');
const { URL, oneStepWorkflow, bootDurable } = require('./lib/standalone');
const { summarize } = require('./lib/util');
const { fmt } = require('./lib/scenarios');

const SCHEMA = 'bench_processes';
const N = Number(process.env.BENCH_PROCESSES_N || 60000);
const COUNTS = (process.env.BENCH_PROCESSES || '1,2,4').split(',').map(Number);
const REPS = Number(process.env.BENCH_REPS || 3);
const KEYED = { 1: [true], alternate: [false, true] }[process.env.BENCH_KEYED] ?? [false];

/** CPU seconds used so far by processes whose command line matches `re` (from /proc; Linux only). */
function cpuSeconds(re) {
  let ticks = 0;
  for (const pid of fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const cmd = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      if (!re.test(cmd)) continue;
      const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
      ticks += Number(f[11]) + Number(f[12]);
    } catch {
      /* gone */
    }
  }
  return ticks / 100;
}

async function drainWith(k, durable, Proc, keyed) {
  await withClient(URL, (c) => c.query(`TRUNCATE ${SCHEMA}.runs CASCADE`));
  const later = new Date(Date.now() + 3_600_000);
  for (let left = N; left > 0; left -= 5000)
    await durable.startMany(
      Proc,
      Array.from({ length: Math.min(5000, left) }, (_, i) => ({ input: { i }, runAt: later, ...(keyed ? { key: `k${left}-${i}` } : {}) })),
    );
  await withClient(URL, (c) => c.query(`ANALYZE ${SCHEMA}.runs`));
  const children = Array.from({ length: k }, () => fork(path.join(__dirname, 'lib', 'worker-process.js'), [SCHEMA], { stdio: 'inherit' }));
  await Promise.all(children.map((c) => new Promise((res, rej) => (c.once('message', res), c.once('exit', rej)))));
  const pg0 = cpuSeconds(/^postgres/);
  const node0 = cpuSeconds(/worker-process/);
  const t0 = Date.now();
  await withClient(URL, (c) =>
    c.query(`WITH u AS (UPDATE ${SCHEMA}.runs SET run_at = now() RETURNING 1) SELECT count(*), pg_notify($1, '') FROM u`, [`durable_${SCHEMA}`]),
  );
  const s = ((await untilDrained(URL, SCHEMA, N)) - t0) / 1000;
  const pg = (cpuSeconds(/^postgres/) - pg0) / s;
  const workers = (cpuSeconds(/worker-process/) - node0) / s;
  for (const c of children) c.send('stop');
  await Promise.all(children.map((c) => new Promise((res) => c.once('exit', res))));
  return { rate: N / s, pgCores: pg, workerCores: workers };
}

(async () => {
  await withClient(URL, (c) => c.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`));
  const Proc = oneStepWorkflow('bench_proc');
  const { app, durable } = await bootDurable({ schema: SCHEMA, worker: false }, [Proc]);
  const rows = [];
  for (const k of COUNTS) {
    const reps = new Map(KEYED.map((keyed) => [keyed, []]));
    for (let r = 0; r < REPS; r++) {
      for (const keyed of KEYED) {
        const x = await drainWith(k, durable, Proc, keyed);
        const what = keyed ? 'keyed' : 'unkeyed';
        console.error(
          `${k} process(es), ${what}, rep ${r + 1}: ${fmt(x.rate)} runs/s; postgres ${x.pgCores.toFixed(2)} cores, workers ${x.workerCores.toFixed(2)} cores`,
        );
        reps.get(keyed).push(x);
      }
    }
    for (const [keyed, xs] of reps) {
      const rate = summarize(xs.map((x) => x.rate));
      rows.push(
        `| ${k} | ${keyed ? 'keyed' : 'unkeyed'} | ${fmt(rate.median)} (${fmt(rate.min)}–${fmt(rate.max)}) | ${summarize(xs.map((x) => x.pgCores)).median.toFixed(2)} | ${summarize(xs.map((x) => x.workerCores)).median.toFixed(2)} |`,
      );
    }
  }
  console.log(
    `\n${fmt(N)} one-step runs, median of ${REPS} (min–max); load average at end ${require('os').loadavg()[0].toFixed(2)}\n\n| worker processes | runs | runs/s | Postgres CPU, cores | workers' CPU, cores |\n|---|---|---|---|---|\n${rows.join('\n')}`,
  );
  await app.close();
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
