'use strict';
// Raw SQL through node-postgres on a minimal table: what Postgres itself allows on this machine for the
// same work, with none of a queue's bookkeeping. A reference column, not a competitor.
//   drain:   claim 50 per statement (FOR UPDATE SKIP LOCKED) and complete them with one statement, 4 loops
//   five:    claim 10 per statement, then one UPDATE + commit per step checkpoint, 16 loops
//   starts:  one single-row INSERT + commit per start (and again with a pg_notify in the same transaction)
//   bulk:    one multi-row INSERT (unnest) per batch
//   latency: INSERT + pg_notify from one connection; a LISTENing connection claims the row on the notification
const { Pool, Client } = require('pg');
const { withClient } = require('../lib/db');
const { now, sleep, Signal, batchedUntil, boxedCalls } = require('../lib/util');

const T = 'bench_raw.runs';

function create(url) {
  const pool = new Pool({ connectionString: url, max: 17 });
  const signal = new Signal();
  const claim = (n) => ({
    name: `raw_claim_${n}`,
    text: `update ${T} r set status = 'running' from (select id from ${T} where status = 'pending' order by id limit ${n} for update skip locked) c
           where r.id = c.id returning r.id`,
  });

  async function loops(count, body) {
    await Promise.all(Array.from({ length: count }, () => body()));
  }

  return {
    name: 'raw',
    describe: 'node-postgres, prepared statements, pool of 17; see the header of systems/raw.js',
    fiveStepModel: 'one UPDATE + commit per step',
    async setup() {
      await withClient(url, (c) =>
        c.query(`create schema if not exists bench_raw;
        create table if not exists ${T} (id bigserial primary key, status text not null default 'pending', step int not null default 0, input jsonb);
        create index if not exists runs_pending on ${T} (id) where status = 'pending'`),
      );
    },
    async reset() {
      await withClient(url, (c) => c.query(`truncate ${T}`));
    },
    async analyze() {
      await withClient(url, (c) => c.query(`analyze ${T}`));
    },
    enqueueNoop(n, batch, deadline) {
      return batchedUntil(n, batch, deadline, async (from, to) => {
        const inputs = [];
        for (let j = from; j < to; j++) inputs.push(JSON.stringify({ i: j }));
        await pool.query({ name: 'raw_bulk', text: `insert into ${T} (input) select x::jsonb from unnest($1::text[]) x`, values: [inputs] });
      });
    },
    async drainNoop(n, boxMs) {
      const t0 = now();
      let units = 0;
      await loops(4, async () => {
        while (now() - t0 < boxMs) {
          const { rows } = await pool.query(claim(50));
          if (!rows.length) return;
          await pool.query({ name: 'raw_done', text: `update ${T} set status = 'completed' where id = any($1::bigint[])`, values: [rows.map((r) => r.id)] });
          units += rows.length;
        }
      });
      return { ms: now() - t0, units, boxed: units < n };
    },
    enqueueFive(n, batch, deadline) {
      return this.enqueueNoop(n, batch, deadline);
    },
    async drainFive(n, boxMs) {
      const t0 = now();
      let units = 0;
      await loops(16, async () => {
        while (now() - t0 < boxMs) {
          const { rows } = await pool.query(claim(10));
          if (!rows.length) return;
          await Promise.all(
            rows.map(async (r) => {
              for (let s = 1; s < 5; s++) {
                await pool.query({ name: 'raw_step', text: `update ${T} set step = $2 where id = $1`, values: [r.id, s] });
                units++;
              }
              await pool.query({ name: 'raw_fin', text: `update ${T} set step = 5, status = 'completed' where id = $1`, values: [r.id] });
              units++;
            }),
          );
        }
      });
      return { ms: now() - t0, units, boxed: units < n * 5 };
    },
    starts(n, callers, boxMs) {
      return boxedCalls(n, callers, boxMs, (i) =>
        pool.query({ name: 'raw_start', text: `insert into ${T} (input) values ($1) returning id`, values: [JSON.stringify({ i })] }),
      );
    },
    // The same start with a NOTIFY in its transaction: Postgres serialises NOTIFYing commits (a
    // database-wide lock is held from pre-commit until the commit is flushed), so concurrency stops helping.
    startsNotify(n, callers, boxMs) {
      return boxedCalls(n, callers, boxMs, (i) =>
        pool.query({
          name: 'raw_start_n',
          text: `with i as (insert into ${T} (input) values ($1) returning id) select pg_notify('bench_raw', i.id::text) from i`,
          values: [JSON.stringify({ i })],
        }),
      );
    },
    async latency(samples, warmup, gapMs) {
      const listener = new Client({ connectionString: url });
      await listener.connect();
      await listener.query('listen bench_raw');
      // claim returning the input for the signal
      const claimText = `update ${T} r set status = 'running' from (select id from ${T} where status = 'pending' order by id limit 1 for update skip locked) c
                         where r.id = c.id returning (r.input->>'i')::int as input_i`;
      listener.on('notification', async () => {
        const { rows } = await listener.query({ name: 'raw_claim1', text: claimText });
        for (const r of rows) signal.fire(r.input_i);
      });
      try {
        const out = [];
        for (let k = -warmup; k < samples; k++) {
          const p = signal.arm(k);
          const t0 = now();
          await pool.query({
            name: 'raw_start_notify',
            text: `with i as (insert into ${T} (input) values ($1) returning id) select pg_notify('bench_raw', '')`,
            values: [JSON.stringify({ i: k })],
          });
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
        await listener.end();
      }
    },
    async teardown() {
      await pool.end();
    },
  };
}

module.exports = { create, variants: ['raw'] };
