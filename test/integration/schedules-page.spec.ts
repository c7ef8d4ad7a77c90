/**
 * A page of stored schedules (`SchedulesStore.page`, which the dashboard's Schedules page and a
 * workflow's page read, each refresh): one workflow's schedules are read through an index, so a
 * workflow with few schedules costs what it shows beside another with tens of thousands (schedules
 * made at runtime, one per tenant).
 */
import { Client } from 'pg';
import { SchedulesStore } from '../../src/store/schedules.store';
import { createApp, databaseUrl, explainingQueryable, ident, sql } from '../support';

describe('SchedulesStore.page', () => {
  it("reads one workflow's schedules, not every stored schedule", async () => {
    const t = await createApp({ workflows: [] });
    const S = ident(t.schema);
    await sql(`insert into ${S}.schedules (name, workflow, cron) select 'tenant-' || g, 'tenant_report', '0 * * * *' from generate_series(1, 20000) g`);
    await sql(`insert into ${S}.schedules (name, workflow, cron) select 'nightly-' || g, 'nightly', '0 0 * * *' from generate_series(1, 3) g`);
    await sql(`analyze ${S}.schedules`);

    // the statements the store sends, run (their rows returned) and explained
    const client = new Client({ connectionString: databaseUrl() });
    await client.connect();
    let read = 0;
    const explaining = explainingQueryable(client, 'schedules', (rows) => (read += rows));
    try {
      const store = t.get(SchedulesStore);
      expect((await store.page(explaining, null, 'nightly', 20)).map((r) => r.name)).toEqual(['nightly-1', 'nightly-2', 'nightly-3']);
      expect((await store.page(explaining, 'nightly-1', 'nightly', 1)).map((r) => r.name)).toEqual(['nightly-2']);
      expect((await store.page(explaining, null, 'no_schedules', 20)).map((r) => r.name)).toEqual([]);
      expect(read).toBeLessThan(100);
      // across workflows, a page from a name reads that page
      read = 0;
      expect((await store.page(explaining, 'tenant-5', null, 50)).length).toBe(50);
      expect(read).toBeLessThan(100);
    } finally {
      await client.end();
    }
  });
});
