/**
 * A node's re-read of the schedules follows the transaction ids that the schedule-changes triggers
 * stamp (`changed_xid`, `schedule_removals.removed_xid`). A database restored from a dump into
 * another cluster, or one that a node reaches after a failover to a replica that lost the last
 * transactions, or a point-in-time recovery, counts its transaction ids from elsewhere: ids stored
 * before may be ahead of the ones it gives now. Its schedules must still tick as they are stored.
 */
import { RunContext, Step, Workflow } from '../../src';
import { Scheduler } from '../../src/schedules/scheduler';
import { createApp, ident, sql } from '../support';

/** Node's copy of schedule `name` (its cron job), if mounted. */
const copyOf = (s: Scheduler, name: string) => (s as unknown as { jobs: { jobs: Map<string, { cron: string; timezone: string }> } }).jobs.jobs.get(name);

@Workflow('restored_tenant')
class Tenant {
  @Step()
  async run(_ctx: RunContext) {
    return 1;
  }
}

const YEARLY = '0 0 1 1 *';

it('a removal recorded with a transaction id ahead of the database (restored) unmounts no schedule that is stored', async () => {
  const a = await createApp({ workflows: [Tenant], options: { nodeId: 'node-a', worker: false } });
  const S = ident(a.schema);
  const s = a.get(Scheduler);
  await a.durable.schedule('restored_tenant', YEARLY, { name: 'tenant-1' });
  await s.sync();
  // restored from a dump of a cluster further on: tenant-1 was removed and stored again there
  await sql(`INSERT INTO ${S}.schedule_removals (name, removed_xid) VALUES ('tenant-1', txid_current() + 1000000000)`);
  await sql(`UPDATE ${S}.schedules SET changed_xid = txid_current() + 1000000001 WHERE name = 'tenant-1'`);
  await s.sync();
  await s.sync();
  expect(s.mounted()).toEqual(['tenant-1']);
  // tenant-1 changed in this cluster: its new id is behind the removal's
  await sql(`UPDATE ${S}.schedules SET cron = '0 0 2 1 *' WHERE name = 'tenant-1'`);
  await s.sync();
  await s.sync();
  expect(s.mounted()).toEqual(['tenant-1']);
  expect(copyOf(s, 'tenant-1')).toMatchObject({ cron: '0 0 2 1 *' });
});

it('a node whose last read was of another server (failover, restore) reads every schedule again', async () => {
  const a = await createApp({ workflows: [Tenant], options: { nodeId: 'node-a', worker: false } });
  const S = ident(a.schema);
  const s = a.get(Scheduler);
  await s.sync();
  // stored on the server the node reaches now, by a transaction the server it read before (a
  // primary that went on further, then failed over to a replica behind it) had already seen
  const [{ xid }] = await sql<{ xid: string }>(
    `INSERT INTO ${S}.schedules (name, workflow, cron) VALUES ('tenant-2', 'restored_tenant', '${YEARLY}') RETURNING changed_xid::text AS xid`,
  );
  await sql('SELECT txid_current()');
  await sql('SELECT txid_current()');
  const reader = (s as unknown as { changes: { last: { mark: { xmax: string; xip: string[] }; at: number; server?: string } } }).changes;
  reader.last = { ...reader.last, mark: { xmax: String(BigInt(xid) + 1n), xip: [] }, server: 'the server before the failover' };
  await s.sync();
  expect(s.mounted()).toEqual(['tenant-2']);
});
