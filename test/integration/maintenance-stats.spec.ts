import { Step, Workflow } from '../../src';
import { DurableCore } from '../../src/engine/durable.core';
import { createApp, ident, sql, waitFor } from '../support';

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

async function runsStats(schema: string): Promise<{ reltuples: number; analyzed: Date | null }> {
  const [row] = await sql<{ reltuples: number; analyzed: Date | null }>(
    `SELECT c.reltuples::float8 AS reltuples, s.last_analyze AS analyzed
     FROM pg_class c LEFT JOIN pg_stat_all_tables s ON s.relid = c.oid WHERE c.oid = $1::regclass`,
    [`${ident(schema)}.runs`],
  );
  return row;
}

describe('maintenance: statistics of runs', () => {
  it('a burst of starts the statistics do not know about is analyzed by the next pass, and claims read runs_due in order', async () => {
    // the node's worker runs only stats_run, so the backlog stays pending; its heartbeat runs the pass
    const t = await createApp({ workflows: [Run, Backlog], options: { worker: { workflows: ['stats_run'] } } });
    // autoanalyze (where autovacuum is on) must not get there first: this test is about the pass
    await sql(`ALTER TABLE ${ident(t.schema)}.runs SET (autovacuum_enabled = false)`);
    await sql(`ANALYZE ${ident(t.schema)}.runs`); // statistics of an empty table
    const before = await runsStats(t.schema);
    expect(before.reltuples).toBeLessThan(1);
    for (let batch = 0; batch < 5; batch++) {
      await t.durable.startMany(Backlog, Array.from({ length: 5_000 }, (_, i) => ({ input: { i } })));
    }
    const after = await waitFor(async () => {
      const now = await runsStats(t.schema);
      return now.analyzed && before.analyzed && now.analyzed > before.analyzed && now.reltuples >= 10_000 ? now : undefined;
    }, { timeout: 20_000, message: 'runs was not analyzed after 25,000 starts' });
    expect(after.reltuples).toBeGreaterThanOrEqual(10_000);
    const plan = (await sql<{ 'QUERY PLAN': string }>(
      `EXPLAIN SELECT id FROM ${ident(t.schema)}.runs WHERE status = 'pending' AND run_at <= now()
       ORDER BY run_at LIMIT 500 FOR UPDATE SKIP LOCKED`,
    )).map((r) => r['QUERY PLAN']).join('\n');
    expect(plan).toContain('Index Scan using runs_due');
    expect(plan).not.toContain('Sort');
  });

  it('fresh statistics are left alone: a pass analyzes only after many changes', async () => {
    const t = await createApp({ workflows: [Run, Backlog], options: { worker: false } });
    const core = t.get(DurableCore);
    await sql(`ANALYZE ${ident(t.schema)}.runs`);
    await t.durable.startMany(Backlog, Array.from({ length: 100 }, () => ({})));
    expect(await core.runs.analyzeIfStale(core.db, 10_000)).toBe(false);
  });
});
