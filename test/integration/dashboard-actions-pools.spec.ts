import type { Pool, PoolClient } from 'pg';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { RunContext, Step, Workflow } from '../../src';
import { DurableDashboardModule } from '../../src/dashboard';
import { DashboardReads } from '../../src/dashboard/dashboard-reads';
import { createApp, databaseUrl, sql, waitFor } from '../support';

@Workflow('pools_node')
class Node {
  @Step()
  async only(ctx: RunContext) {
    return ctx.input;
  }
}

/** The sessions of `app` (the application_name of the module's pool, which the dashboard's pool copies) in a transaction, doing nothing. */
async function idleInTransaction(app: string): Promise<number> {
  const [row] = await sql(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1 AND state = 'idle in transaction'`, [app]);
  return row.n;
}

describe("a dashboard action while the dashboard's own pool is busy", () => {
  let ds: DataSource | undefined;
  const held: PoolClient[] = [];

  afterEach(async () => {
    for (const c of held.splice(0)) c.release();
    await ds?.destroy().catch(() => undefined);
    ds = undefined;
  });

  it("waits for the pages' pool without holding a connection of the module's (the workers') pool", async () => {
    const app = `pools_${process.pid}_${Date.now()}`;
    ds = new DataSource({ type: 'postgres', url: databaseUrl(), extra: { application_name: app } });
    await ds.initialize();
    const t = await createApp({
      workflows: [Node],
      imports: [DurableDashboardModule.forRoot({ readOnly: false })],
      options: { dataSource: ds, worker: false },
      http: () => undefined,
    });
    const later = (await t.durable.start('pools_node', 1, { runAt: new Date(Date.now() + 3_600_000) })).runId;
    // every connection of the pages' pool taken (as by slow pages)
    const reads = t.get(DashboardReads);
    void reads.readers;
    const pages = (reads as unknown as { pool: Pool }).pool;
    for (let i = 0; i < pages.options.max; i++) held.push(await pages.connect());

    const answer = request(t.server)
      .post(`/durable/runs/${later}/cancel`)
      .set('Origin', 'http://127.0.0.1')
      .set('Host', '127.0.0.1')
      .type('form')
      .send({})
      .then((res) => res.status);
    await waitFor(() => pages.waitingCount === 1, { timeout: 10_000, message: "the action waits for a connection of the pages' pool" });
    expect(await idleInTransaction(app)).toBe(0);

    for (const c of held.splice(0)) c.release();
    expect(await answer).toBe(303);
    expect((await t.durable.getRun(later))?.status).toBe('cancelled');
  });
});
