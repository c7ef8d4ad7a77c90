import type { QueryRunner } from 'typeorm';
import { DurableMigration } from './durable-migration';

/**
 * `waits.timeout_value`: a wait that timed out returned its `timeoutValue` (the step went on)
 * rather than failing the step with `TimeoutError`. `retry` arms again only the waits whose timeout
 * failed the step; one that returned its value is replayed like any other recorded answer. A
 * nullable column without a default: added without rewriting the table.
 */
export class DurableWaitTimeoutValue1733040023000 extends DurableMigration {
  name = 'DurableWaitTimeoutValue1733040023000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE ${this.s}.waits ADD COLUMN IF NOT EXISTS timeout_value boolean`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE ${this.s}.waits DROP COLUMN IF EXISTS timeout_value`);
  }
}
