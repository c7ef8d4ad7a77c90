'use strict';
// Profile the one-step drain: node --cpu-prof on the worker process, and Postgres' view of the same
// seconds (pg_stat_statements if loaded; otherwise pg_stat_activity sampling plus counters).
//   node bench/profile.js                 ours, 100k x BENCH_SCALE runs (default scale 0.5)
//   BENCH_ONLY=graphile node bench/profile.js   profile a peer instead
//   BENCH_PROFILE_PGSS=1 node bench/profile.js  on an embedded Postgres with pg_stat_statements loaded
//   BENCH_PROFILE_NODE_ARGS='--trace-gc' node bench/profile.js   more node flags for the profiled worker process
const { fork } = require('child_process');
const fs = require('fs');
const path = require('path');
const { Client } = require('pg');
const { resolveUrl, startEmbedded, stopEmbedded } = require('./lib/db');
const { log, sleep } = require('./lib/util');

const TOP = Number(process.env.BENCH_PROFILE_TOP || 25);
const variant = process.env.BENCH_ONLY || 'ours';
const SCHEMAS = {
  ours: process.env.BENCH_OURS_SCHEMA || 'bench_durable',
  graphile: 'bench_graphile',
  'graphile-default': 'bench_graphile',
  pgboss: 'bench_pgboss',
  raw: 'bench_raw',
};
const outDir = path.join(__dirname, 'results', 'prof');

function child(url, group, n, nodeArgs = []) {
  return new Promise((resolve) => {
    const c = fork(path.join(__dirname, 'lib', 'child.js'), [variant, group, 'drain'], {
      env: { ...process.env, BENCH_URL: url, BENCH_REPS: '1', BENCH_PROFILE_N: String(n) },
      execArgv: nodeArgs,
    });
    let msg = null;
    c.on('message', (m) => {
      msg = m;
    });
    c.on('exit', () => resolve(msg));
  });
}

// Self time per function, counting only samples inside [from, to] (µs, V8 monotonic clock = process.hrtime).
function summarizeCpuProfile(file, from = -Infinity, to = Infinity) {
  const prof = JSON.parse(fs.readFileSync(file, 'utf8'));
  const byId = new Map(prof.nodes.map((n) => [n.id, n]));
  const self = new Map();
  let t = prof.startTime;
  for (let i = 0; i < prof.samples.length; i++) {
    const dt = prof.timeDeltas[i] || 0;
    t += dt;
    if (t < from || t > to) continue;
    self.set(prof.samples[i], (self.get(prof.samples[i]) || 0) + dt);
  }
  const total = [...self.values()].reduce((a, b) => a + b, 0);
  const fn = new Map();
  const cat = new Map();
  const root = path.resolve(__dirname, '..');
  for (const [id, us] of self) {
    const { callFrame: cf } = byId.get(id);
    const url = (cf.url || '').replace('file://', '');
    const where = url ? `${path.relative(root, url) || url}:${cf.lineNumber + 1}` : '';
    const key = `${cf.functionName || '(anonymous)'} ${where}`.trim();
    fn.set(key, (fn.get(key) || 0) + us);
    let c;
    if (!url) c = cf.functionName.startsWith('(') ? cf.functionName : 'native/V8';
    else if (url.startsWith('node:')) c = 'node internals';
    else if (/node_modules\/((@[^/]+\/)?[^/]+)/.test(url)) c = url.match(/node_modules\/((@[^/]+\/)?[^/]+)/)[1];
    else if (url.includes('/dist/src/') || url.includes('/dist/migrations/')) c = `nestjs-durable ${url.slice(url.indexOf('/dist/') + 6)}`;
    else if (url.includes('/bench/')) c = 'bench harness';
    else c = url;
    cat.set(c, (cat.get(c) || 0) + us);
  }
  const pct = (us) => `${((us / total) * 100).toFixed(1).padStart(5)}%`;
  const rows = (m) =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, TOP)
      .map(([k, us]) => `${pct(us)} ${(us / 1000).toFixed(0).padStart(7)} ms  ${k}`);
  return { totalMs: total / 1000, functions: rows(fn), categories: rows(cat) };
}

async function pgStatStatements(c) {
  const pre = (await c.query(`select setting from pg_settings where name = 'shared_preload_libraries'`)).rows[0].setting;
  if (!/pg_stat_statements/.test(pre))
    return {
      available: false,
      why: `pg_stat_statements is not in shared_preload_libraries ('${pre}'); restart Postgres with shared_preload_libraries = 'pg_stat_statements' to get per-statement totals`,
    };
  try {
    await c.query('create extension if not exists pg_stat_statements');
  } catch (e) {
    return { available: false, why: e.message };
  }
  return { available: true };
}

async function counters(c, schema) {
  const db = (
    await c.query(
      `select xact_commit::bigint c, xact_rollback::bigint r, blks_hit::bigint h, blks_read::bigint rd, tup_inserted::bigint i, tup_updated::bigint u, tup_deleted::bigint d, tup_returned::bigint ret, tup_fetched::bigint f from pg_stat_database where datname = current_database()`,
    )
  ).rows[0];
  const wal = (await c.query(`select pg_current_wal_lsn() lsn`)).rows[0].lsn;
  const tables = (
    await c.query(
      `select relname, n_tup_ins::bigint ins, n_tup_upd::bigint upd, n_tup_hot_upd::bigint hot, n_tup_del::bigint del, seq_scan::bigint seq, idx_scan::bigint idx from pg_stat_user_tables where schemaname = $1`,
      [schema],
    )
  ).rows;
  return { db, wal, tables };
}

async function main() {
  // BENCH_PROFILE_PGSS=1: profile on an embedded Postgres started with pg_stat_statements preloaded
  // (the machine's server may not load it); its figures are not comparable with the bench table's
  const url = process.env.BENCH_PROFILE_PGSS
    ? (log('starting an embedded Postgres with shared_preload_libraries = pg_stat_statements'),
      await startEmbedded(['-c', 'shared_preload_libraries=pg_stat_statements']))
    : await resolveUrl({ log });
  const n = Math.round(100000 * Number(process.env.BENCH_SCALE || 0.5));
  fs.mkdirSync(outDir, { recursive: true });
  const report = [];
  const out = (s = '') => {
    report.push(s);
    console.log(s);
  };

  log(`profile: ${variant}, one-step drain of ${n} runs`);
  const enq = await child(url, 'enqueue', n);
  if (!enq || !enq.ok) throw new Error(`enqueue failed: ${enq && enq.error}`);

  const c = new Client({ connectionString: url });
  await c.connect();
  await c.query(`set application_name = 'bench-profiler'`);
  const pss = await pgStatStatements(c);
  if (pss.available) await c.query('select pg_stat_statements_reset()');
  await c.query('select pg_stat_reset()').catch(() => {});
  await sleep(600); // stats collector flush
  const before = await counters(c, SCHEMAS[variant]);

  // pg_stat_activity sampling: what each backend is doing, every 10 ms, while the drain runs
  const samples = new Map();
  const waits = new Map();
  let sampling = true;
  let nSamples = 0;
  const sampler = (async () => {
    while (sampling) {
      // only this system's statements: other sessions (tests, other tools) may share the database
      const { rows } = await c.query(
        `select state, wait_event_type, wait_event, left(regexp_replace(query, '\\s+', ' ', 'g'), 160) q from pg_stat_activity
        where datname = current_database() and pid <> pg_backend_pid() and backend_type = 'client backend' and application_name <> 'bench-profiler'
          and state = 'active' and strpos(query, $1) > 0`,
        [SCHEMAS[variant]],
      );
      nSamples++;
      for (const r of rows) {
        if (r.state === 'idle') continue;
        const key = `${r.state === 'active' ? '' : `[${r.state}] `}${r.q}`;
        samples.set(key, (samples.get(key) || 0) + 1);
        const w = r.wait_event_type ? `${r.wait_event_type}:${r.wait_event}` : r.state === 'active' ? 'CPU (no wait event)' : r.state;
        waits.set(w, (waits.get(w) || 0) + 1);
      }
      await sleep(10);
    }
  })();

  const t0 = Date.now();
  const res = await child(url, 'drainonly', n, [
    ...(process.env.BENCH_PROFILE_NODE_ARGS || '').split(' ').filter(Boolean),
    `--cpu-prof`,
    `--cpu-prof-dir=${outDir}`,
    '--enable-source-maps',
  ]);
  const wall = Date.now() - t0;
  sampling = false;
  await sampler;
  await sleep(600);
  const after = await counters(c, SCHEMAS[variant]);
  if (!res || !res.ok) throw new Error(`drain failed: ${res && res.error}`);

  out(`# Profile: ${variant}, one-step drain of ${n} runs (${new Date().toISOString()})`);
  out('');
  out(`drain: ${Math.round(res.result.drainMs)} ms, ${Math.round(res.result.rate)} runs/s (child wall ${wall} ms incl. boot)`);
  const prof = fs
    .readdirSync(outDir)
    .filter((f) => f.endsWith('.cpuprofile'))
    .map((f) => path.join(outDir, f))
    .sort((a, b) => fs.statSync(b).mtimeMs - fs.statSync(a).mtimeMs)[0];
  const s = summarizeCpuProfile(prof, Number(res.result.hrStart), Number(res.result.hrEnd));
  out('');
  out(
    `## Node CPU profile (${path.relative(process.cwd(), prof)}, ${Math.round(s.totalMs)} ms sampled inside the timed drain, boot and module loading excluded; self time)`,
  );
  out('');
  out('By package / file:');
  out('```');
  s.categories.forEach((r) => out(r));
  out('```');
  out(`Top ${TOP} functions:`);
  out('```');
  s.functions.forEach((r) => out(r));
  out('```');

  out('');
  out('## Postgres');
  const d = (k) => Number(after.db[k]) - Number(before.db[k]);
  const walBytes = Number((await c.query('select pg_wal_lsn_diff($1, $2)::bigint b', [after.wal, before.wal])).rows[0].b);
  out('');
  out(
    `per run: ${(d('c') / n).toFixed(2)} commits, ${(walBytes / n).toFixed(0)} WAL bytes, ${(d('i') / n).toFixed(2)} rows inserted, ${(d('u') / n).toFixed(2)} updated, ${(d('d') / n).toFixed(2)} deleted, ${(d('f') / n).toFixed(1)} rows fetched (database-wide, includes the profiler's own queries)`,
  );
  out('');
  out('Tables (deltas):');
  out('```');
  for (const t of after.tables) {
    const b = before.tables.find((x) => x.relname === t.relname) || {};
    const dd = (k) => Number(t[k]) - Number(b[k] || 0);
    out(`${t.relname.padEnd(28)} ins ${dd('ins')}  upd ${dd('upd')} (hot ${dd('hot')})  del ${dd('del')}  seq scans ${dd('seq')}  idx scans ${dd('idx')}`);
  }
  out('```');
  if (pss.available) {
    const { rows } = await c.query(`select calls, round(total_exec_time::numeric, 1) total_ms, round(mean_exec_time::numeric, 3) mean_ms, rows,
      left(regexp_replace(query, '\\s+', ' ', 'g'), 200) q from pg_stat_statements where query not ilike '%pg_stat%' order by total_exec_time desc limit ${TOP}`);
    out('pg_stat_statements, top statements by total time:');
    out('```');
    for (const r of rows) out(`${String(r.total_ms).padStart(9)} ms  ${String(r.calls).padStart(7)} calls  ${r.mean_ms} ms/call  ${r.rows} rows  ${r.q}`);
    out('```');
  } else {
    out(`pg_stat_statements: not available — ${pss.why}. Skipped; falling back to sampling pg_stat_activity every 10 ms.`);
  }
  const top = (m) => [...m.entries()].sort((a, b) => b[1] - a[1]).slice(0, TOP);
  out('');
  out(
    `pg_stat_activity sampling (${nSamples} samples, active backends running statements on ${SCHEMAS[variant]} only; share of samples in which a backend was busy with the statement — can add up past 100% with several backends):`,
  );
  out('```');
  for (const [q, k] of top(samples)) out(`${((k / nSamples) * 100).toFixed(1).padStart(6)}%  ${q}`);
  out('```');
  out('Wait events of busy backends:');
  out('```');
  for (const [w, k] of top(waits)) out(`${((k / nSamples) * 100).toFixed(1).padStart(6)}%  ${w}`);
  out('```');
  await c.end();
  const file = path.join(__dirname, 'results', `profile-${variant}.md`);
  fs.writeFileSync(file, `${report.join('\n')}\n`);
  log(`wrote ${path.relative(process.cwd(), file)}`);
  await stopEmbedded();
}

main().catch(async (e) => {
  console.error(e);
  await stopEmbedded();
  process.exit(1);
});
