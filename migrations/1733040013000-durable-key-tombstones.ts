import type { QueryRunner } from 'typeorm';
import { DurableMigration } from './durable-migration';

/**
 * Key tombstones (`retention.keys`): a pruned run that still holds its key keeps a slim row — its
 * history and payloads gone, `pruned_at` set — until the key horizon, so pruning history does not
 * free a key that `reuse` keeps. Adding a nullable column rewrites nothing.
 */
export class DurableKeyTombstones1733040013000 extends DurableMigration {
  name = 'DurableKeyTombstones1733040013000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE ${this.s}.runs ADD COLUMN IF NOT EXISTS pruned_at timestamptz`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DELETE FROM ${this.s}.runs WHERE pruned_at IS NOT NULL`);
    await q.query(`ALTER TABLE ${this.s}.runs DROP COLUMN IF EXISTS pruned_at`);
  }
}
