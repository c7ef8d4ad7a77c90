import { AsyncLocalStorage } from 'async_hooks';
import { DataSource, type EntityManager } from 'typeorm';
import { RunContext, Step, Workflow } from '../../src';
import { createApp, databaseUrl, ident, sql } from '../support';

/** Scheduled through the API. */
@Workflow('sched_app_tx')
class Scheduled {
  @Step()
  async run(ctx: RunContext) {
    return { input: ctx.input ?? null };
  }
}

/** A tick far from now: the schedule only fires through triggerSchedule here. */
const CRON = '0 0 1 1 *';

/**
 * The app's DataSource as `typeorm-transactional` leaves it once registered: its `manager` is the
 * manager of the transaction of the `@Transactional()` method running (the plain one outside).
 */
function transactionalDataSource(ds: DataSource, context: AsyncLocalStorage<EntityManager>): DataSource {
  const plain = ds.manager;
  Object.defineProperty(ds, 'manager', { configurable: true, get: () => context.getStore() ?? plain });
  return ds;
}

describe("triggerSchedule in a caller's transaction (the app's DataSource)", () => {
  it("runs on its own: its run is committed when it returns, and its fire's settings stay out of the caller's transaction", async () => {
    const context = new AsyncLocalStorage<EntityManager>();
    const ds = transactionalDataSource(new DataSource({ type: 'postgres', url: databaseUrl() }), context);
    await ds.initialize();
    const t = await createApp({ workflows: [Scheduled], options: { worker: false, dataSource: ds, transactionManager: () => ds.manager } });
    const runner = ds.createQueryRunner();
    try {
      await t.durable.schedule('sched_app_tx', CRON, { name: 'app_tx' });
      await runner.connect();
      await runner.startTransaction();
      // a @Transactional() method calls triggerSchedule
      const fired = await context.run(runner.manager, () => t.durable.triggerSchedule('app_tx'));
      // the fire's idle_in_transaction_session_timeout (5 s) would end the caller's transaction at its first pause
      const [{ v }] = await runner.query(`SELECT current_setting('idle_in_transaction_session_timeout') AS v`);
      expect(v).toBe('0');
      // committed on its own, whatever the caller's transaction does
      const seen = async () => sql<{ id: string }>(`select id from ${ident(t.schema)}.runs where id = $1`, [fired.runId]);
      expect(await seen()).toHaveLength(1);
      await runner.rollbackTransaction();
      expect(await seen()).toHaveLength(1);
    } finally {
      if (runner.isTransactionActive) await runner.rollbackTransaction().catch(() => undefined);
      await runner.release();
      await t.close();
      await ds.destroy();
    }
  });
});
