'use strict';
// What the completion of a one-step run costs PostgreSQL alone, against what a run record could cost
// at the least (standalone; `npm run build` at the root first):
//
//   node bench/completion.js          # or: npm run completion -w bench
//   BENCH_COMPLETION_N=100000 node bench/completion.js
//
// Per variant and round: a fresh schema (the module's migrations), N runs inserted `running` for one
// node, VACUUM ANALYZE, then every run completed in batches of 500 on one connection, each batch its
// own statement and commit; prints microseconds per run end to end (round trip and commit included).
// Variants, taking turns over 3 rounds:
// - `transition`: the module's completion statement (`RunsStore.transition`, every field a one-step
//   run's completion sends);
// - `minimal update`: an UPDATE that sets only status, result and end time (the least a completion
//   that keeps the run on record writes), with the module's indexes;
// - `minimal, no finished-run indexes`: the same without `runs_finished` and `runs_workflow_status_other`;
// - `delete`: the run rows deleted instead (what a queue that keeps no record does; the rows of
//   waits, memos and events reference runs, so each delete checks them).
// Uses DATABASE_URL, else the local postgres://postgres@127.0.0.1:5432/test; schema `bench_completion`.
const { execFileSync } = require('child_process');
const path = require('path');
const { withClient } = require('./lib/db');
const { URL } = require('./lib/standalone');
const { runsStatements } = require('../dist/src/store/runs.sql');
const { encodeTransitions } = require('../dist/src/store/transition.fields');

const SCHEMA = 'bench_completion';
const N = Number(process.env.BENCH_COMPLETION_N || 60000);
const BATCH = 500;
const ROUNDS = 3;
const CLI = path.join(__dirname, '..', 'dist', 'src', 'cli', 'main.js');

const VARIANTS = {
  transition: { drop: [], complete: (c, sql, ids) => c.query(sql.transition, [encodeTransitions(ids.map(oneStepCompletion)), 'n']) },
  'minimal update': { drop: [], complete: minimalUpdate },
  'minimal, no finished-run indexes': { drop: ['runs_finished', 'runs_workflow_status_other'], complete: minimalUpdate },
  delete: { drop: [], complete: (c, _sql, ids) => c.query(`DELETE FROM ${SCHEMA}.runs WHERE id = ANY($1::uuid[])`, [ids]) },
};

/** A one-step run's completion as the worker sends it. */
function oneStepCompletion(id) {
  const now = Date.now();
  return {
    id,
    epoch: 1,
    status: 'completed',
    step: 1,
    attempt: 1,
    result: null,
    results: { run: null },
    final: true,
    tried_step: 0,
    tried_attempt: 1,
    tried_status: 'completed',
    tried_from_ms: now - 1,
    tried_to_ms: now,
  };
}

function minimalUpdate(c, _sql, ids) {
  return c.query(`UPDATE ${SCHEMA}.runs SET status = 'completed', result = 'null', finished_at = now() WHERE id = ANY($1::uuid[])`, [ids]);
}

/** Microseconds per run to complete N running runs with `variant`, on a fresh schema. */
async function measure(c, variant) {
  const { drop, complete } = VARIANTS[variant];
  await c.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
  execFileSync(process.execPath, [CLI, 'migrate', '--url', URL, '--schema', SCHEMA], { stdio: 'ignore' });
  for (const index of drop) await c.query(`DROP INDEX ${SCHEMA}.${index}`);
  await c.query(
    `INSERT INTO ${SCHEMA}.runs (id, workflow, input, status, node_id, epoch, attempt, started_at, run_at)
     SELECT gen_random_uuid(), 'bench', jsonb_build_object('i', g), 'running', 'n', 1, 1, now(), now() FROM generate_series(1, $1) g`,
    [N],
  );
  await c.query(`VACUUM ANALYZE ${SCHEMA}.runs`);
  const ids = (await c.query(`SELECT id FROM ${SCHEMA}.runs ORDER BY id`)).rows.map((r) => r.id);
  const sql = runsStatements(SCHEMA);
  let ns = 0n;
  for (let i = 0; i < ids.length; i += BATCH) {
    const t0 = process.hrtime.bigint();
    await complete(c, sql, ids.slice(i, i + BATCH));
    ns += process.hrtime.bigint() - t0;
  }
  const [{ left }] = (await c.query(`SELECT count(*)::int AS left FROM ${SCHEMA}.runs WHERE status = 'running'`)).rows;
  if (left !== 0) throw new Error(`${variant}: ${left} runs were not completed`);
  return Number(ns) / 1000 / ids.length;
}

(async () => {
  const results = Object.fromEntries(Object.keys(VARIANTS).map((v) => [v, []]));
  await withClient(URL, async (c) => {
    for (let round = 0; round < ROUNDS; round++) for (const variant of Object.keys(VARIANTS)) results[variant].push(await measure(c, variant));
    await c.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
  });
  console.log(`completion of ${N} running runs, batches of ${BATCH}, one connection; µs per run end to end, median (min–max) of ${ROUNDS}`);
  for (const [variant, us] of Object.entries(results)) {
    const s = [...us].sort((a, b) => a - b);
    console.log(`${variant.padEnd(34)} ${s[1].toFixed(1)} (${s[0].toFixed(1)}–${s[2].toFixed(1)})`);
  }
})().catch((err) => {
  console.error(err);
  process.exit(1);
});
