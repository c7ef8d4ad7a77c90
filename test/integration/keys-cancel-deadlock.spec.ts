/**
 * A cancelExisting start outside a caller's transaction deadlocks with a child of the holder that
 * ends at that moment (the cancel locks the holder, then its children; the child's end locks the
 * child, then the holder): decided again like `cancel`, not refused with SerializationError.
 */
import { Client } from 'pg';
import { RunContext, Step, Workflow } from '../../src';
import { createApp, databaseUrl, Gate, ident, sql, waitFor, waitForLockWait } from '../support';

const gate = new Gate();

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
}

describe('cancelExisting meeting a child that ends', () => {
  afterAll(() => gate.open());

  it('a deadlock with the end of the holder’s child is decided again: the new run replaces the holder', async () => {
    const t = await createApp({ workflows: [Parent, Child] });
    const S = ident(t.schema);
    const holder = (await t.durable.start(Parent, {}, { key: 'k' })).runId;
    await waitFor(async () => (await t.durable.getRun(holder))?.status === 'waiting', { message: 'the holder waits for its child' });
    const [{ id: child }] = await sql<{ id: string }>(`SELECT id FROM ${S}.runs WHERE parent_id = $1`, [holder]);
    const other = new Client({ connectionString: databaseUrl() });
    await other.connect();
    try {
      // another transaction holds the child's row, then ends it while the start's cancel waits for that
      // row; it waits long before looking for deadlocks, so the start is the one PostgreSQL aborts
      await other.query(`SET deadlock_timeout = '20s'`);
      await other.query('BEGIN');
      await other.query(`SELECT 1 FROM ${S}.runs WHERE id = $1 FOR UPDATE`, [child]);
      const started = t.durable.start(Parent, {}, { key: 'k' });
      await waitForLockWait([`${S}.runs`], 'the cancel of the holder waits for its child');
      const ending = other.query(`UPDATE ${S}.runs SET status = 'completed', finished_at = now(), result = '"child"' WHERE id = $1`, [child]);
      await ending;
      await other.query('COMMIT');
      const result = await started;
      expect(result.outcome).toBe('cancelExisting');
      expect(await t.durable.getRun(holder)).toMatchObject({ status: 'cancelled', holdsKey: false });
      expect((await t.durable.getRun(result.runId))!.holdsKey).toBe(true);
    } finally {
      await other.query('ROLLBACK').catch(() => undefined);
      await other.end();
    }
  });
});
