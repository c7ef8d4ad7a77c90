import type { QueryRunner } from 'typeorm';
import { DurableMigration } from './durable-migration';
import { runHooksOnFinish } from './run-hooks-trigger';

/**
 * A flow node cancelled because one of its dependencies was cancelled, failed or deleted is
 * cancelled before it ever ran: it owes its flow's `afterCancelled` hook, and no longer the run's
 * lifecycle hook `onRunCancelled` as well (`durable_run_hooks_on_finish` leaves it out). A node
 * cancelled any other way (by `cancel`, by a key's `cancelExisting`) still owes `onRunCancelled`.
 */
export class DurableFlowCascadeHooks1733040028000 extends DurableMigration {
  name = 'DurableFlowCascadeHooks1733040028000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(runHooksOnFinish(this.s, true));
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(runHooksOnFinish(this.s, false));
  }
}
