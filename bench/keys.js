'use strict';
// Workflow-key benchmark of nestjs-durable (standalone; `npm run build` at the root first):
//
//   node bench/keys.js            # or: npm run keys -w bench
//   BENCH_KEYS_N=10000 BENCH_KEYS_ROUNDS=3 node bench/keys.js
//
// Measures, from 1 and from 16 concurrent callers (worker: false, so nothing else runs):
//   - unkeyed starts/s (the reference), keyed starts/s with fresh keys, and starts/s where every
//     start is a duplicate of a held key (useExisting) — with the default activityCommit
//     ('synchronous') and with activityCommit: 'asynchronous' (the duplicate's record commits
//     without waiting for the WAL flush);
//   - debounce collapse: 10,000 keyed starts over 100 keys of a debounced workflow → the runs
//     created (expected 100), and whether each one holds the last input of its key;
//   - reading one key back (listRuns, listActivity) with and without its workflow, ms per call.
// Each figure is the median of the rounds with min–max. Within a round the four kinds of start take
// turns in chunks (BENCH_KEYS_CHUNKS per round, default 10), so a drift of the machine's speed during
// the run (±30% within a minute on a shared VM) weighs on all of them alike instead of on whichever
// ran during the slow minute; each kind's rate is its starts over its own time. Uses DATABASE_URL, else the local
// postgres://postgres@127.0.0.1:5432/test; works in its own schema (`bench_keys`, dropped first).
const { withClient } = require('./lib/db');
const { URL, oneStepWorkflow, bootDurable } = require('./lib/standalone');
const { seconds, round: turns, median, fmt } = require('./lib/turns');

const SCHEMA = 'bench_keys';
const N = Number(process.env.BENCH_KEYS_N || 10000);
const ROUNDS = Number(process.env.BENCH_KEYS_ROUNDS || 3);
const CHUNKS = Number(process.env.BENCH_KEYS_CHUNKS || 10);

const Plain = oneStepWorkflow('bench_keys_plain');
const Debounced = oneStepWorkflow('bench_keys_debounced', { debounce: { period: '1h' } });

/** Rows of one query on a connection of its own. */
const sql = (text, params) => withClient(URL, async (c) => (await c.query(text, params)).rows);

(async () => {
  await sql(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
  const boot = (options) => bootDurable({ schema: SCHEMA, worker: false, ...options }, [Plain, Debounced]);
  const { app, durable } = await boot({});
  const { app: relaxedApp, durable: relaxed } = await boot({ migrationsRun: false, activityCommit: 'asynchronous' });
  const [{ version }] = await sql('SELECT version()');
  console.log(`nestjs-durable key benchmark — ${new Date().toISOString()} — ${version.split(' on ')[0]} — node ${process.version}`);
  const rows = [];
  for (const callers of [1, 16]) {
    const r = { unkeyed: [], fresh: [], duplicate: [], relaxed: [] };
    for (let i = 0; i < ROUNDS; i++) {
      const tag = `${callers}-${i}`;
      // the statistics a worker node's maintenance pass keeps (it analyzes runs and activity once a
      // tenth of them changed; these apps run no worker): a start's prepared statement planned on
      // the empty tables of the first round would otherwise keep that plan while each round adds
      // 10,000 keys held by pending runs
      await sql(`ANALYZE ${SCHEMA}.runs`);
      await sql(`ANALYZE ${SCHEMA}.activity`);
      await durable.start(Plain, { n: 1 }, { key: `held-${tag}` });
      const rates = await turns(
        callers,
        {
          unkeyed: () => durable.start(Plain, { n: 1 }),
          fresh: (j) => durable.start(Plain, { n: 1 }, { key: `fresh-${tag}-${j}` }),
          duplicate: () => durable.start(Plain, { n: 2 }, { key: `held-${tag}` }),
          relaxed: () => relaxed.start(Plain, { n: 3 }, { key: `held-${tag}` }),
        },
        N,
        CHUNKS,
      );
      for (const [k, v] of Object.entries(rates)) r[k].push(v);
      process.stdout.write(`  ${callers} caller(s), round ${i + 1}/${ROUNDS} done\n`);
    }
    rows.push([callers, r]);
  }
  console.log(
    '\n| callers | unkeyed starts/s | keyed, fresh keys | keyed ÷ unkeyed | duplicates (useExisting) | duplicates ÷ fresh | duplicates, activityCommit asynchronous | ÷ fresh |',
  );
  console.log('|---|---|---|---|---|---|---|---|');
  for (const [callers, r] of rows) {
    console.log(
      `| ${callers} | ${fmt(r.unkeyed)} | ${fmt(r.fresh)} | ${(median(r.fresh) / median(r.unkeyed)).toFixed(2)}× | ${fmt(r.duplicate)} | ${(median(r.duplicate) / median(r.fresh)).toFixed(2)}× | ${fmt(r.relaxed)} | ${(median(r.relaxed) / median(r.fresh)).toFixed(2)}× |`,
    );
  }
  // debounce collapse: 10,000 starts over 100 keys from 16 callers, input { k, seq }
  const KEYS = 100;
  const STARTS = 10000;
  const seq = new Array(KEYS).fill(-1);
  const t0 = Date.now();
  let n = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      for (let i = n++; i < STARTS; i = n++) {
        const k = i % KEYS;
        await durable.start(Debounced, { k, i }, { key: `d-${k}` });
        seq[k] = Math.max(seq[k], i);
      }
    }),
  );
  const ms = Date.now() - t0;
  const runs = await sql(`SELECT key, input FROM ${SCHEMA}.runs WHERE workflow = 'bench_keys_debounced'`);
  // with 16 concurrent callers the "last" start of a key is the one that committed last: compare
  // each run's input with the newest debounced re-add recorded for its key
  const last = await sql(
    `SELECT DISTINCT ON (key) key, details->'input' AS input FROM ${SCHEMA}.activity
     WHERE workflow = 'bench_keys_debounced' AND kind = 'key_duplicate' ORDER BY key, id DESC`,
  );
  const lastByKey = new Map(last.map((r) => [r.key, JSON.stringify(r.input)]));
  const withLast = runs.filter((r) => lastByKey.get(r.key) === JSON.stringify(r.input)).length;
  console.log(
    `\ndebounce collapse: ${STARTS.toLocaleString('en-US')} starts over ${KEYS} keys in ${ms} ms (${Math.round(STARTS / (ms / 1000)).toLocaleString('en-US')} starts/s) → ${runs.length} runs; ${withLast} of them hold the last input of their key`,
  );
  // reading a key back, with and without its workflow, on the tables the rounds filled — analyzed
  // first, as autovacuum or a worker's maintenance pass would have (worker: false here)
  await sql(`ANALYZE ${SCHEMA}.runs`);
  await sql(`ANALYZE ${SCHEMA}.activity`);
  const [{ runCount, activityCount }] = await sql(
    `SELECT (SELECT count(*) FROM ${SCHEMA}.runs)::int AS "runCount", (SELECT count(*) FROM ${SCHEMA}.activity)::int AS "activityCount"`,
  );
  const reads = {
    'listRuns({ key })': () => durable.listRuns({ key: 'fresh-16-0-7' }),
    'listRuns({ workflow, key })': () => durable.listRuns({ workflow: Plain, key: 'fresh-16-0-7' }),
    'listActivity({ key })': () => durable.listActivity({ key: 'held-16-0' }),
    'listActivity({ workflow, key })': () => durable.listActivity({ workflow: Plain, key: 'held-16-0' }),
  };
  const READS = 200;
  const perRead = [];
  for (const [name, fn] of Object.entries(reads)) perRead.push(`${name} ${((1000 * (await seconds(0, READS, 1, fn))) / READS).toFixed(2)} ms`);
  console.log(`
reads, mean of ${READS} from 1 caller (${runCount.toLocaleString('en-US')} runs, ${activityCount.toLocaleString('en-US')} activity rows): ${perRead.join(', ')}`);
  await relaxedApp.close();
  await app.close();
  await sql(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
