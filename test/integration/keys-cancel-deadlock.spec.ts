/**
 * A cancelExisting start, in a caller's transaction or not, deadlocks with a child of the holder that
 * ends at that moment (the cancel locks the holder, then its children; the child's end locks the
 * child, then the holder): decided again like `cancel`, not refused with SerializationError.
 */
import { Client } from 'pg';
import { DataSource, type EntityManager } from 'typeorm';
import { RunContext, Step, Workflow } from '../../src';
import { createApp, databaseUrl, Gate, ident, sql, waitFor, waitForLockWait, type TestApp } from '../support';

const gate = new Gate();
// keeps the holder going once its child ended, so the start decided again after the deadlock finds
// it still holding its key (else, on a slow machine, the woken holder could complete first: 'created')
const afterChild = new Gate();

@Workflow('kcd_child', { retry: { attempts: 1 } })
class Child {
  @Step()
  async hold(ctx: RunContext) {
    await gate.wait(ctx.signal);
    return 'child';
  }
}

@Workflow('kcd_parent', { onDuplicate: 'cancelExisting', retry: { attempts: 1 } })
class Parent {
  @Step()
  async call(ctx: RunContext) {
    return ctx.callWorkflow(Child, {});
  }

  @Step()
  async hold(ctx: RunContext) {
    await afterChild.wait(ctx.signal);
  }
}

describe('cancelExisting meeting a child that ends', () => {
  afterAll(() => {
    gate.open();
    afterChild.open();
  });

  /**
   * Starts `start` while another transaction holds the holder's child, then ends that child: the
   * start's cancel of the holder waits for the child's row while the child's end waits for the
   * holder's, and PostgreSQL aborts the start (the other transaction waits long before looking).
   */
  async function meetEndingChild<T>(t: TestApp, key: string, start: () => Promise<T>): Promise<{ holder: string; result: T }> {
    const S = ident(t.schema);
    const holder = (await t.durable.start(Parent, {}, { key })).runId;
    await waitFor(async () => (await t.durable.getRun(holder))?.status === 'waiting', { message: 'the holder waits for its child' });
    const [{ id: child }] = await sql<{ id: string }>(`SELECT id FROM ${S}.runs WHERE parent_id = $1`, [holder]);
    const other = new Client({ connectionString: databaseUrl() });
    await other.connect();
    try {
      await other.query(`SET deadlock_timeout = '20s'`);
      await other.query('BEGIN');
      await other.query(`SELECT 1 FROM ${S}.runs WHERE id = $1 FOR UPDATE`, [child]);
      const started = start();
      await waitForLockWait([`${S}.runs`], 'the cancel of the holder waits for its child');
      await other.query(`UPDATE ${S}.runs SET status = 'completed', finished_at = now(), result = '"child"' WHERE id = $1`, [child]);
      await other.query('COMMIT');
      return { holder, result: await started };
    } finally {
      await other.query('ROLLBACK').catch(() => undefined);
      await other.end();
    }
  }

  it('a deadlock with the end of the holder’s child is decided again: the new run replaces the holder', async () => {
    const t = await createApp({ workflows: [Parent, Child] });
    const { holder, result } = await meetEndingChild(t, 'k', () => t.durable.start(Parent, {}, { key: 'k' }));
    expect(result.outcome).toBe('cancelExisting');
    expect(await t.durable.getRun(holder)).toMatchObject({ status: 'cancelled', holdsKey: false });
    expect((await t.durable.getRun(result.runId))!.holdsKey).toBe(true);
  });

  it('inside a caller’s transaction too, and the transaction goes on and commits', async () => {
    const t = await createApp({ workflows: [Parent, Child] });
    const ds = new DataSource({ type: 'postgres', url: databaseUrl() });
    await ds.initialize();
    try {
      const { holder, result } = await meetEndingChild(t, 'k-tx', () =>
        ds.transaction(async (manager) => {
          const r = await t.durable.start(Parent, {}, { key: 'k-tx', manager });
          expect(await manager.query('SELECT 1 AS one')).toEqual([{ one: 1 }]);
          return r;
        }),
      );
      expect(result.outcome).toBe('cancelExisting');
      expect(await t.durable.getRun(holder)).toMatchObject({ status: 'cancelled', holdsKey: false });
      expect((await t.durable.getRun(result.runId))!.holdsKey).toBe(true);
    } finally {
      await ds.destroy();
    }
  });

  it('a sendEvent made at once on the same (ambient) transaction waits for the start decided again, and is kept', async () => {
    const ds = new DataSource({ type: 'postgres', url: databaseUrl() });
    await ds.initialize();
    let ambient: EntityManager | undefined;
    try {
      const t = await createApp({ workflows: [Parent, Child], options: { dataSource: ds, transactionManager: () => ambient } });
      const target = (await t.durable.start(Child, {})).runId;
      const { result } = await meetEndingChild(t, 'k-ambient', () =>
        ds.transaction(async (manager) => {
          ambient = manager;
          // the event is sent while the start waits for the child's lock, which then deadlocks
          return Promise.all([
            t.durable.start(Parent, {}, { key: 'k-ambient' }),
            waitForLockWait([`${ident(t.schema)}.runs`], 'the start waits').then(() => t.durable.sendEvent(target, 'ping', { n: 1 }, { buffer: true })),
          ]);
        }),
      );
      ambient = undefined;
      expect(result).toEqual([expect.objectContaining({ outcome: 'cancelExisting' }), 'kept']);
      expect(await sql(`SELECT name FROM ${ident(t.schema)}.events WHERE run_id = $1`, [target])).toEqual([{ name: 'ping' }]);
    } finally {
      ambient = undefined;
      await ds.destroy();
    }
  });
});
