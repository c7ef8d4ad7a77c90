/**
 * Every node re-reads the schedules with its heartbeat (at most every 5 s) to follow `schedule` and
 * `unschedule` calls made on other nodes. With schedules made at runtime (one per tenant: tens of
 * thousands), that re-read must read what changed since the node's last one, not every stored
 * schedule — and still see every change: a schedule added, one whose cron or workflow changed, one
 * removed (also removed and added again), whichever node or statement made it.
 */
import { RunContext, Step, Workflow } from '../../src';
import { DurableConnection } from '../../src/core/durable.connection';
import { Scheduler } from '../../src/schedules/scheduler';
import { Client } from 'pg';
import { createApp, databaseUrl, ident, rowsReadBy, sql, TestApp, waitFor } from '../support';

@Workflow('sync_tenant')
class Tenant {
  @Step()
  async run(_ctx: RunContext) {
    return 1;
  }
}

const YEARLY = '0 0 1 1 *';

it("a node's re-read of the schedules reads those that changed since its last one, not the 20,000 stored", async () => {
  const a = await createApp({ workflows: [Tenant], options: { nodeId: 'node-a', worker: false } });
  const b = await createApp({ schema: a.schema, workflows: [Tenant], options: { nodeId: 'node-b', worker: false } });
  // a transaction left open meanwhile (anywhere in the cluster) holds back no re-read
  const open = new Client({ connectionString: databaseUrl() });
  await open.connect();
  await open.query('BEGIN');
  await open.query('SELECT txid_current()');
  try {
    await changes(a, b);
  } finally {
    await open.end();
  }
});

async function changes(a: TestApp, b: TestApp) {
  const S = ident(a.schema);
  const s = a.get(Scheduler);
  const connection = a.get(DurableConnection);
  // tenants' schedules of a workflow this node does not have (it ticks none of them), and a few of its own
  await sql(`INSERT INTO ${S}.schedules (name, workflow, cron) SELECT 'tenant-' || g, 'tenant_report', '${YEARLY}' FROM generate_series(1, 20000) g`);
  await sql(`INSERT INTO ${S}.schedules (name, workflow, cron) SELECT 'own-' || g, 'sync_tenant', '${YEARLY}' FROM generate_series(1, 3) g`);
  await sql(`ANALYZE ${S}.schedules`);
  await waitFor(() => s.mounted().length === 3, { message: 'node a ticks its 3 schedules' });
  /** Node a's next re-read, a fresh one (not one under way with the heartbeat): the rows of `schedules` it read. */
  const reread = () =>
    rowsReadBy(connection, 'schedules', async () => {
      await s.sync();
      await s.sync();
    });

  expect(await reread()).toBeLessThan(100);

  // changes made elsewhere: another node's calls, and statements of the database's own
  await b.durable.schedule('sync_tenant', YEARLY, { name: 'added' });
  expect(await b.durable.unschedule('own-1')).toBe(true);
  await sql(`UPDATE ${S}.schedules SET workflow = 'sync_tenant' WHERE name = 'tenant-7'`);
  await sql(`UPDATE ${S}.schedules SET workflow = 'tenant_report' WHERE name = 'own-2'`);
  await b.durable.unschedule('own-3');
  await b.durable.schedule('sync_tenant', '0 0 2 1 *', { name: 'own-3' });
  const read = await reread();
  expect(read).toBeLessThan(100);
  expect(s.mounted()).toEqual(['added', 'own-3', 'tenant-7']);
  // the job of own-3 is the new one (a node whose copy is out of date fires nothing)
  const future = new Date(Date.UTC(new Date().getUTCFullYear() + 1, 0, 2));
  expect(await s.fireTick({ name: 'own-3', workflow: 'sync_tenant', cron: '0 0 2 1 *', timezone: 'UTC' }, future, null)).toMatchObject({ fired: true });

  // nothing changed: nothing read again
  expect(await reread()).toBeLessThan(100);
  expect(s.mounted()).toEqual(['added', 'own-3', 'tenant-7']);

  // a table emptied at once: read again whole
  await sql(`TRUNCATE ${S}.schedules CASCADE`);
  await reread();
  expect(s.mounted()).toEqual([]);
}
