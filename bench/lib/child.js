'use strict';
// One system, one scenario group, BENCH_REPS repetitions; results go to the parent over IPC.
// Usage (normally via run.js / profile.js): node lib/child.js <variant> <group> <wanted,metrics>
const { GROUPS } = require('./scenarios');
const { log } = require('./util');

const MODULES = {
  ours: '../systems/ours',
  graphile: '../systems/graphile',
  'graphile-default': '../systems/graphile',
  pgboss: '../systems/pgboss',
  raw: '../systems/raw',
};

async function main() {
  const [variant, group, wanted] = process.argv.slice(2);
  const url = process.env.BENCH_URL;
  const want = new Set((wanted || '').split(',').filter(Boolean));
  const send = (m) => (process.send ? process.send(m) : console.log(JSON.stringify(m)));
  let sys;
  try {
    sys = require(MODULES[variant]).create(url, variant);
    await sys.setup();
    const result = await GROUPS[group](sys, want, (r, _out, msg) => log(`  ${variant} ${group} rep ${r}: ${msg}`));
    send({ ok: true, variant, group, describe: sys.describe, fiveStepModel: sys.fiveStepModel, result });
  } catch (e) {
    log(`  ${variant} ${group} FAILED: ${e && e.stack ? e.stack.split('\n').slice(0, 4).join(' | ') : e}`);
    send({ ok: false, variant, group, error: String((e && e.message) || e), describe: sys && sys.describe });
  } finally {
    if (sys) await Promise.race([sys.teardown().catch(() => {}), new Promise((r) => setTimeout(r, 5000))]);
  }
  // Some libraries keep timers alive; the parent has the result already.
  setTimeout(() => process.exit(0), 100);
}

main();
