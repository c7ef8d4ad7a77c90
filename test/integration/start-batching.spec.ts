import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { RunsStore } from '../../src/store/runs.store';
import { clientQueryable } from '../../src/store/db';
import type { NewRun } from '../../src/store/runs.types';
import { DurableService, KeyTakenError, Step, Workflow } from '../../src';
import { countRuns, createApp, databaseUrl, ident, sql, TestApp } from '../support';
import { holdersOf } from '../support/keys';

@Workflow('batch_plain')
class Plain {
  @Step()
  async run() {
    return null;
  }
}

@Workflow('batch_keyed', { onDuplicate: 'useExisting' })
class Keyed {
  @Step()
  async run() {
    return null;
  }
}

@Workflow('batch_strict', { onDuplicate: 'error' })
class Strict {
  @Step()
  async run() {
    return null;
  }
}

/** How many transactions wrote the runs of `workflow` (rows one statement inserts share an xmin). */
async function writers(schema: string, workflow: string): Promise<number> {
  const [{ n }] = await sql<{ n: number }>(`SELECT count(DISTINCT xmin::text)::int AS n FROM ${ident(schema)}.runs WHERE workflow = $1`, [workflow]);
  return n;
}

describe('autocommit starts share statements (group commit)', () => {
  let t: TestApp;
  let durable: DurableService;

  beforeEach(async () => {
    t = await createApp({ workflows: [Plain, Keyed, Strict], options: { worker: false } });
    durable = t.durable;
  });

  it('200 concurrent starts: each gets its own committed run with its input, written by a few shared statements', async () => {
    const results = await Promise.all(Array.from({ length: 200 }, (_, i) => durable.start(Plain, { i })));
    const ids = results.map((r) => r.runId);
    expect(new Set(ids).size).toBe(200);
    expect(results.every((r) => r.outcome === 'created')).toBe(true);
    const rows = await sql<{ id: string; i: number }>(`SELECT id, (input->>'i')::int AS i FROM ${ident(t.schema)}.runs`);
    const byId = new Map(rows.map((r) => [r.id, r.i]));
    ids.forEach((id, i) => expect(byId.get(id)).toBe(i));
    // one start alone would mean 200 transactions; the queue behind the statements in flight shares one
    expect(await writers(t.schema, 'batch_plain')).toBeLessThan(20);
  });

  it('keyed starts in one batch: fresh keys are created, 50 starts of one key find one holder', async () => {
    const fresh = Array.from({ length: 50 }, (_, i) => durable.start(Keyed, { i }, { key: `fresh-${i}` }));
    const same = Array.from({ length: 50 }, (_, i) => durable.start(Keyed, { same: i }, { key: 'shared' }));
    const [f, s] = await Promise.all([Promise.all(fresh), Promise.all(same)]);
    expect(f.every((r) => r.outcome === 'created')).toBe(true);
    expect(new Set(f.map((r) => r.runId)).size).toBe(50);
    const holders = await holdersOf(t.schema, 'batch_keyed', 'shared');
    expect(holders).toHaveLength(1);
    expect(s.every((r) => r.runId === holders[0])).toBe(true);
    expect(s.filter((r) => r.outcome === 'created')).toHaveLength(1);
    expect(s.filter((r) => r.outcome === 'useExisting')).toHaveLength(49);
    expect(await countRuns(t.schema)).toBe(51);
    // each duplicate answered is recorded once
    const [{ n }] = await sql<{ n: number }>(`SELECT count(*)::int AS n FROM ${ident(t.schema)}.activity WHERE kind = 'key_duplicate' AND run_id = $1`, [
      holders[0],
    ]);
    expect(n).toBe(49);
  });

  it("onDuplicate 'error' in a batch: every duplicate of a held key gets its own KeyTakenError", async () => {
    const holder = await durable.start(Strict, {}, { key: 'k' });
    const settled = await Promise.allSettled([
      ...Array.from({ length: 30 }, () => durable.start(Strict, {}, { key: 'k' })),
      ...Array.from({ length: 30 }, (_, i) => durable.start(Strict, {}, { key: `other-${i}` })),
    ]);
    const refused = settled.slice(0, 30);
    expect(refused.every((r) => r.status === 'rejected' && r.reason instanceof KeyTakenError && r.reason.holderId === holder.runId)).toBe(true);
    expect(settled.slice(30).every((r) => r.status === 'fulfilled' && r.value.outcome === 'created')).toBe(true);
  });

  it("activityCommit 'asynchronous': a batch mixing fresh keys and duplicates records each duplicate once", async () => {
    const relaxed = await createApp({ workflows: [Keyed], schema: t.schema, options: { worker: false, migrationsRun: false, activityCommit: 'asynchronous' } });
    const holder = await relaxed.durable.start(Keyed, {}, { key: 'held' });
    const results = await Promise.all(Array.from({ length: 40 }, (_, i) => relaxed.durable.start(Keyed, { i }, { key: i % 2 ? 'held' : `fresh-${i}` })));
    expect(results.filter((_, i) => i % 2 === 1).every((r) => r.outcome === 'useExisting' && r.runId === holder.runId)).toBe(true);
    expect(results.filter((_, i) => i % 2 === 0).every((r) => r.outcome === 'created')).toBe(true);
    const [{ n }] = await sql<{ n: number }>(`SELECT count(*)::int AS n FROM ${ident(t.schema)}.activity WHERE kind = 'key_duplicate' AND run_id = $1`, [
      holder.runId,
    ]);
    expect(n).toBe(20);
    expect((await relaxed.durable.getRun(holder.runId))?.readds).toBe(20);
  });

  it("activityCommit 'asynchronous' relaxes only statements that inserted no run (seen at commit by a deferred trigger)", async () => {
    const S = ident(t.schema);
    // a deferred constraint trigger runs at COMMIT: it records the commit mode of every transaction
    // that inserted a run or an activity record
    await sql(`CREATE TABLE ${S}.commit_modes (tbl text, mode text)`);
    await sql(`CREATE FUNCTION ${S}.note_commit_mode() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN INSERT INTO ${S}.commit_modes VALUES (TG_TABLE_NAME, current_setting('synchronous_commit')); RETURN NULL; END $$`);
    for (const tbl of ['runs', 'activity']) {
      await sql(`CREATE CONSTRAINT TRIGGER note_${tbl} AFTER INSERT ON ${S}.${tbl} DEFERRABLE INITIALLY DEFERRED
        FOR EACH ROW EXECUTE FUNCTION ${S}.note_commit_mode()`);
    }
    // the module's connections commit synchronously by default here, whatever the test server's
    // own default (the embedded one runs with synchronous_commit = off)
    const url = new URL(databaseUrl());
    url.searchParams.set('options', '-c synchronous_commit=on');
    const relaxed = await createApp({
      workflows: [Keyed],
      schema: t.schema,
      options: { url: url.toString(), worker: false, migrationsRun: false, activityCommit: 'asynchronous' },
    });
    await relaxed.durable.start(Keyed, {}, { key: 'held' });
    await sql(`DELETE FROM ${S}.commit_modes`);
    // mixed batches (fresh keys and duplicates) and duplicate-only statements
    await Promise.all(Array.from({ length: 40 }, (_, i) => relaxed.durable.start(Keyed, { i }, { key: i % 2 ? 'held' : `fresh-${i}` })));
    await relaxed.durable.start(Keyed, { alone: true }, { key: 'held' });
    const modes = await sql<{ tbl: string; mode: string }>(`SELECT tbl, mode FROM ${S}.commit_modes`);
    expect(modes.filter((m) => m.tbl === 'runs')).toHaveLength(20);
    expect(modes.filter((m) => m.tbl === 'runs').every((m) => m.mode === 'on')).toBe(true);
    // the lone duplicate's statement (it inserted no run) did commit relaxed: the trigger can see it
    expect(modes.some((m) => m.tbl === 'activity' && m.mode === 'off')).toBe(true);
  });

  it('two statements inserting the same fresh keys in opposite orders do not deadlock', async () => {
    const S = ident(t.schema);
    // each inserted row takes a while, so the two statements overlap row by row
    await sql(`CREATE FUNCTION ${S}.slow_insert() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(0.05); RETURN NEW; END $$`);
    await sql(`CREATE TRIGGER slow_insert BEFORE INSERT ON ${S}.runs FOR EACH ROW EXECUTE FUNCTION ${S}.slow_insert()`);
    const runs = t.get(RunsStore);
    const run = (key: string): NewRun => ({
      id: crypto.randomUUID(),
      workflow: 'batch_keyed',
      key,
      holds_key: true,
      input: null,
      run_at: null,
      timeout_ms: null,
    });
    const settled = { useExisting: [], reject: [] };
    const keys = Array.from({ length: 6 }, (_, i) => `k${i}`);
    const clients = [new Client({ connectionString: databaseUrl() }), new Client({ connectionString: databaseUrl() })];
    try {
      await Promise.all(clients.map((c) => c.connect()));
      const [a, b] = await Promise.all([
        runs.insertOrAnswer(
          clientQueryable(clients[0]),
          keys.map((k) => ({ run: run(k), settled })),
          { notify: false, relaxedCommit: false },
        ),
        runs.insertOrAnswer(
          clientQueryable(clients[1]),
          [...keys].reverse().map((k) => ({ run: run(k), settled })),
          { notify: false, relaxedCommit: false },
        ),
      ]);
      // no deadlock (40P01) error: each key went to exactly one of the two statements
      const created = [...a, ...b].filter((x) => x === 'created');
      expect(created).toHaveLength(6);
      for (const k of keys) expect(await holdersOf(t.schema, 'batch_keyed', k)).toHaveLength(1);
    } finally {
      await Promise.all(clients.map((c) => c.end()));
    }
  });

  it('a start Postgres refuses fails alone: the other starts of its statement are created', async () => {
    // a constraint of the user's own (the library cannot know it) refuses one row of the batch
    await sql(`ALTER TABLE ${ident(t.schema)}.runs ADD CONSTRAINT no_poison CHECK (NOT coalesce(input ? 'poison', false)) NOT VALID`);
    const settled = await Promise.allSettled(Array.from({ length: 40 }, (_, i) => durable.start(Plain, i === 17 ? { poison: true } : { i })));
    const failed = settled.flatMap((r, i) => (r.status === 'rejected' ? [i] : []));
    expect(failed).toEqual([17]);
    expect((settled[17] as PromiseRejectedResult).reason).toMatchObject({ code: '23514', constraint: 'no_poison' });
    expect(await countRuns(t.schema)).toBe(39);
    expect(await countRuns(t.schema, `input ? 'poison'`)).toBe(0);
  });

  it("starts in a caller's transaction are not grouped with others: a rollback removes only its own", async () => {
    const ds = await new DataSource({ type: 'postgres', url: databaseUrl() }).initialize();
    try {
      const outside = Array.from({ length: 20 }, (_, i) => durable.start(Plain, { i }));
      const inside = ds.transaction(async (manager) => {
        await durable.start(Plain, { inTx: true }, { manager });
        throw new Error('roll back');
      });
      await expect(inside).rejects.toThrow('roll back');
      await Promise.all(outside);
      expect(await countRuns(t.schema)).toBe(20);
      expect(await countRuns(t.schema, `input ? 'inTx'`)).toBe(0);
    } finally {
      await ds.destroy();
    }
  });
});
