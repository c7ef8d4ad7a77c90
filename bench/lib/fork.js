'use strict';
// Runs one system × scenario group in its own child process (lib/child.js) and resolves with its report.
const { fork } = require('child_process');
const fs = require('fs');
const path = require('path');
const { log } = require('./util');

/**
 * @param {string} url database URL
 * @param {string} variant system (ours, graphile, graphile-default, pgboss, raw)
 * @param {string} group scenario group of lib/scenarios.js
 * @param {string[]} wanted metrics of that group
 * @param {Record<string, string>} [env] extra environment of the child (e.g. its concurrency)
 */
function runChild(url, variant, group, wanted, env = {}) {
  return new Promise((resolve) => {
    const child = fork(path.join(__dirname, 'child.js'), [variant, group, wanted.join(',')], {
      env: { ...process.env, ...env, BENCH_URL: url },
      execArgv: ['--enable-source-maps', ...(process.env.BENCH_CHILD_NODE_ARGS || '').split(' ').filter(Boolean)],
    });
    let msg = null;
    const kill = setTimeout(
      () => {
        log(`  ${variant} ${group}: child timeout, killing`);
        child.kill('SIGKILL');
      },
      Number(process.env.BENCH_CHILD_TIMEOUT_MS || 300000),
    );
    child.on('message', (m) => {
      msg = m;
    });
    child.on('exit', (code) => {
      clearTimeout(kill);
      resolve(msg || { ok: false, variant, group, error: `child exited with code ${code} before reporting` });
    });
  });
}

/** runChild, tried once more after 5 s when the failure looks like the machine's (connections, a build in progress). */
async function runChildRetrying(url, variant, group, wanted, env) {
  const r = await runChild(url, variant, group, wanted, env);
  if (r.ok || !/too many clients|ECONNREFUSED|ECONNRESET|terminat|Cannot find module|not built|SyntaxError/i.test(r.error || '')) return r;
  log(`  retrying once in 5 s (${r.error})`);
  await new Promise((res) => setTimeout(res, 5000));
  return runChild(url, variant, group, wanted, env);
}

/** Copy the built library so every child of this run uses the same build; record which commit it is. */
function snapshotLibrary() {
  const root = path.resolve(__dirname, '..', '..');
  const dist = path.join(root, 'dist');
  let commit = 'unknown';
  try {
    const { execSync } = require('child_process');
    commit = execSync('git rev-parse --short HEAD', { cwd: root }).toString().trim();
    const dirty = execSync('git status --porcelain -- src migrations', { cwd: root }).toString().trim();
    if (dirty) commit += ' (+ uncommitted changes in src/ or migrations/)';
  } catch {
    /* not a git checkout */
  }
  if (process.env.BENCH_NO_SNAPSHOT || !fs.existsSync(path.join(dist, 'src', 'index.js')))
    return {
      commit,
      built: fs.existsSync(path.join(dist, 'src', 'index.js')) ? fs.statSync(path.join(dist, 'src', 'index.js')).mtime.toISOString() : 'not built',
    };
  const snap = path.join(__dirname, '..', '.lib-snapshot');
  fs.rmSync(snap, { recursive: true, force: true });
  fs.cpSync(dist, path.join(snap, 'dist'), { recursive: true });
  process.env.BENCH_OURS_LIB = path.join(snap, 'dist', 'src', 'index.js');
  return { commit, built: fs.statSync(path.join(dist, 'src', 'index.js')).mtime.toISOString() };
}

module.exports = { runChild, runChildRetrying, snapshotLibrary };
