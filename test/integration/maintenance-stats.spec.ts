import { Step, Workflow } from '../../src';
import { DurableConnection } from '../../src/core/durable.connection';
import { RunsStore } from '../../src/store/runs.store';
import { createApp, ident, sql, waitFor } from '../support';
import { rowsReadEach } from '../support/explain';

@Workflow('stats_run')
class Run {
  @Step()
  async only() {
    return null;
  }
}

@Workflow('stats_backlog')
class Backlog {
  @Step()
  async only() {
    return null;
  }
}

async function tableStats(schema: string, table: string): Promise<{ reltuples: number; analyzed: Date | null }> {
  const [row] = await sql<{ reltuples: number; analyzed: Date | null }>(
    `SELECT c.reltuples::float8 AS reltuples, s.last_analyze AS analyzed
     FROM pg_class c LEFT JOIN pg_stat_all_tables s ON s.relid = c.oid WHERE c.oid = $1::regclass`,
    [`${ident(schema)}.${table}`],
  );
  return row;
}

const explain = async (query: string) => (await sql<{ 'QUERY PLAN': string }>(`EXPLAIN ${query}`)).map((r) => r['QUERY PLAN']).join('\n');

describe('maintenance: statistics of runs and activity', () => {
  it("a burst the statistics do not know about is analyzed by the next pass: claims read a workflow's due runs from runs_pending in order, a key's activity is read newest first", async () => {
    // the node's worker runs only stats_run, so the backlog stays pending; its heartbeat runs the pass
    const t = await createApp({ workflows: [Run, Backlog], options: { worker: { workflows: ['stats_run'] } } });
    const S = ident(t.schema);
    const before: Record<string, { reltuples: number; analyzed: Date | null }> = {};
    for (const table of ['runs', 'activity']) {
      // autoanalyze (where autovacuum is on) must not get there first: this test is about the pass
      await sql(`ALTER TABLE ${S}.${table} SET (autovacuum_enabled = false)`);
      await sql(`ANALYZE ${S}.${table}`); // statistics of an empty table
      before[table] = await tableStats(t.schema, table);
      expect(before[table].reltuples).toBeLessThan(1);
    }
    for (let batch = 0; batch < 5; batch++) {
      await t.durable.startMany(
        Backlog,
        Array.from({ length: 5_000 }, (_, i) => ({ input: { i } })),
      );
    }
    // a hot key's duplicates (written here in bulk: 4,000 per key, 5 per transaction time)
    await sql(`INSERT INTO ${S}.activity (kind, run_id, workflow, key, at, details)
      SELECT 'key_duplicate', gen_random_uuid(), 'stats_backlog', 'hot-' || (g % 5), now() - (g / 5) * interval '1 ms', '{}'
      FROM generate_series(1, 20000) g`);
    for (const [table, min] of [
      ['runs', 10_000],
      ['activity', 10_000],
    ] as const) {
      const after = await waitFor(
        async () => {
          const now = await tableStats(t.schema, table);
          return now.analyzed && before[table].analyzed && now.analyzed > before[table].analyzed! && now.reltuples >= min ? now : undefined;
        },
        { timeout: 20_000, message: `${table} was not analyzed after the burst` },
      );
      expect(after.reltuples).toBeGreaterThanOrEqual(min);
    }
    const claim = await explain(
      `SELECT id FROM ${S}.runs WHERE status = 'pending' AND workflow = 'stats_backlog' AND run_at <= now() ORDER BY run_at LIMIT 500 FOR UPDATE SKIP LOCKED`,
    );
    expect(claim).toContain('Index Scan using runs_pending');
    expect(claim).not.toContain('Sort');
    const readKey = await explain(
      `SELECT a.id FROM ${S}.activity a WHERE workflow = 'stats_backlog' AND key = 'hot-1' ORDER BY a.at DESC, a.id DESC LIMIT 100`,
    );
    expect(readKey).toContain('Index Scan Backward using activity_key');
  });

  it('fresh statistics are left alone: a pass analyzes only after many changes', async () => {
    const t = await createApp({ workflows: [Run, Backlog], options: { worker: false } });
    await sql(`ANALYZE ${ident(t.schema)}.runs`);
    await t.durable.startMany(
      Backlog,
      Array.from({ length: 100 }, () => ({})),
    );
    expect(await t.get(RunsStore).analyzeIfStale(t.get(DurableConnection).db, 10_000)).toEqual([]);
  });

  it("the check reads the statistics of the module's own tables only, however many relations the database holds", async () => {
    const t = await createApp({ workflows: [Run, Backlog], options: { worker: false } });
    const [{ n: relations }] = await sql<{ n: number }>(`SELECT count(*)::int AS n FROM pg_class`);
    // autoanalyze (where autovacuum is on) must not reset the count before the check reads it
    await sql(`ALTER TABLE ${ident(t.schema)}.runs SET (autovacuum_enabled = false)`);
    await t.durable.startMany(
      Backlog,
      Array.from({ length: 100 }, () => ({})),
    );
    // the counts reach the statistics a moment after the commit
    await waitFor(
      async () => (await sql<{ n: number }>(`SELECT pg_stat_get_mod_since_analyze($1::regclass)::int AS n`, [`${ident(t.schema)}.runs`]))[0].n >= 100,
      { timeout: 10_000, message: 'the 100 starts are not counted in the statistics' },
    );
    let analyzed: string[] = [];
    const read = await rowsReadEach(t.get(DurableConnection), 'pg_class', async () => {
      analyzed = await t.get(RunsStore).analyzeIfStale(t.get(DurableConnection).db, 10);
    });
    // it still finds what changed: 100 new runs in a never analyzed table
    expect(analyzed).toContain('runs');
    // the check and the ANALYZEs: one statement read pg_class, and only the two tables' rows of it
    // (reading the pg_stat_all_tables view reads every relation: hundreds even in a fresh database)
    expect(relations).toBeGreaterThan(100);
    expect(read).toEqual([2]);
  });
});
