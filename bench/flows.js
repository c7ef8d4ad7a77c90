'use strict';
// DAG-flow benchmark of nestjs-durable (standalone; `npm run build` at the root first):
//
//   node bench/flows.js                 # fan-out/fan-in 1 → 1,000 → 1 and a 1,000-node chain, 3 rounds each
//   BENCH_FLOW_WIDTH=2000 BENCH_FLOW_CHAIN=500 BENCH_FLOW_ROUNDS=5 BENCH_FLOW_CONCURRENCY=100 node bench/flows.js
//
// Every node is a one-step no-op workflow. Times are end to end: from the `startFlow` call (one
// transaction inserting every node and edge) to the last node's run being `completed` in the
// database. Uses DATABASE_URL, else postgres://postgres@127.0.0.1:5432/test; works in its own schema
// (`bench_flows`, dropped first). Prints a table and one JSON line (`FLOWS_RESULT {...}`).
require('reflect-metadata');
const { withClient } = require('./lib/db');
const os = require('os');

const URL = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test';
const SCHEMA = process.env.BENCH_FLOW_SCHEMA || 'bench_flows';
const WIDTH = Number(process.env.BENCH_FLOW_WIDTH || 1000);
const CHAIN = Number(process.env.BENCH_FLOW_CHAIN || 1000);
const ROUNDS = Number(process.env.BENCH_FLOW_ROUNDS || 3);
const CONCURRENCY = Number(process.env.BENCH_FLOW_CONCURRENCY || 200);

function loadLibrary() {
  if (process.env.BENCH_FLOW_LIB) return require(process.env.BENCH_FLOW_LIB);
  for (const id of ['nestjs-durable', '..']) {
    try {
      return require(id);
    } catch (e) {
      if (id === '..') throw new Error(`nestjs-durable is not built (run \`npm run build\` at the repo root): ${e.message}`, { cause: e });
    }
  }
}

const lib = loadLibrary();
const { Workflow, Step, DurableModule, DurableService } = lib;
const { Module } = require('@nestjs/common');
const { NestFactory } = require('@nestjs/core');

/** Resolves when the node named `last` of the current round ran. */
let lastRan = () => undefined;
class FlowNoop {
  async run(ctx) {
    if (ctx.flow && ctx.flow.name === 'last') lastRan();
    return null;
  }
}
{
  const desc = Object.getOwnPropertyDescriptor(FlowNoop.prototype, 'run');
  const out = Step()(FlowNoop.prototype, 'run', desc);
  if (out) Object.defineProperty(FlowNoop.prototype, 'run', out);
  Workflow('bench_flow_noop')(FlowNoop);
}

/** Rows of one query on a connection of its own. */
const sql = (text, params) => withClient(URL, async (c) => (await c.query(text, params)).rows);

async function makeApp() {
  class BenchFlowsModule {}
  Module({
    imports: [
      DurableModule.forRoot({
        url: URL,
        schema: SCHEMA,
        worker: { concurrency: CONCURRENCY, pollInterval: '1s' },
        retention: { runs: false },
        shutdownTimeout: '5s',
      }),
    ],
    providers: [FlowNoop],
  })(BenchFlowsModule);
  const app = await NestFactory.createApplicationContext(BenchFlowsModule, { logger: process.env.BENCH_FLOW_LOG ? ['error', 'warn'] : false });
  return { app, durable: app.get(DurableService) };
}

/** Runs one flow end to end; returns { totalMs, insertMs }. */
async function runFlow(durable, build) {
  const ran = new Promise((resolve) => (lastRan = resolve));
  const t0 = process.hrtime.bigint();
  const { runIds } = await durable.startFlow(build(durable.flow()));
  const insertMs = Number(process.hrtime.bigint() - t0) / 1e6;
  await ran;
  for (;;) {
    const run = await durable.getRun(runIds.last);
    if (run.status === 'completed') break;
    if (run.status !== 'running' && run.status !== 'pending') throw new Error(`last node ended ${run.status}`);
    await new Promise((r) => setTimeout(r, 2));
  }
  const totalMs = Number(process.hrtime.bigint() - t0) / 1e6;
  return { totalMs, insertMs, nodes: Object.keys(runIds).length };
}

const fanOutIn = (width) => (f) => {
  f.add('first', FlowNoop);
  const mid = [];
  for (let i = 0; i < width; i++) {
    const name = `m${i}`;
    mid.push(name);
    f.add(name, FlowNoop, null, { deps: ['first'] });
  }
  return f.add('last', FlowNoop, null, { deps: mid });
};

const chain = (length) => (f) => {
  let prev = 'n0';
  f.add(prev, FlowNoop);
  for (let i = 1; i < length - 1; i++) {
    f.add(`n${i}`, FlowNoop, null, { deps: [prev] });
    prev = `n${i}`;
  }
  return f.add('last', FlowNoop, null, { deps: [prev] });
};

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
};

async function main() {
  await sql(`DROP SCHEMA IF EXISTS "${SCHEMA}" CASCADE`);
  const { app, durable } = await makeApp();
  const scenarios = [
    { name: `fan-out/fan-in 1 → ${WIDTH} → 1`, build: fanOutIn(WIDTH), target: 2000 },
    { name: `chain of ${CHAIN}`, build: chain(CHAIN) },
  ];
  const results = [];
  try {
    await runFlow(durable, fanOutIn(50)); // warm-up (connections, prepared statements, JIT)
    for (const s of scenarios) {
      const rounds = [];
      for (let r = 0; r < ROUNDS; r++) rounds.push(await runFlow(durable, s.build));
      const total = rounds.map((x) => x.totalMs);
      const res = {
        scenario: s.name,
        nodes: rounds[0].nodes,
        medianMs: Math.round(median(total)),
        bestMs: Math.round(Math.min(...total)),
        insertMedianMs: Math.round(median(rounds.map((x) => x.insertMs))),
        nodesPerSec: Math.round(rounds[0].nodes / (median(total) / 1000)),
        target: s.target ? `≤ ${s.target} ms: ${median(total) <= s.target ? 'met' : 'MISSED'}` : undefined,
      };
      results.push(res);
    }
  } finally {
    await app.close();
  }
  console.log(
    `nestjs-durable DAG flows — ${os.cpus().length} CPUs, load ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}, worker concurrency ${CONCURRENCY}, ${ROUNDS} rounds`,
  );
  console.log('| scenario | nodes | median | best | insert (median) | nodes/s | target |');
  console.log('|---|---:|---:|---:|---:|---:|---|');
  for (const r of results) {
    console.log(`| ${r.scenario} | ${r.nodes} | ${r.medianMs} ms | ${r.bestMs} ms | ${r.insertMedianMs} ms | ${r.nodesPerSec} | ${r.target ?? ''} |`);
  }
  console.log(`FLOWS_RESULT ${JSON.stringify({ at: new Date().toISOString(), concurrency: CONCURRENCY, rounds: ROUNDS, results })}`);
  await sql(`DROP SCHEMA IF EXISTS "${SCHEMA}" CASCADE`).catch(() => undefined);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
