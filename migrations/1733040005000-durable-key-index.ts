import type { QueryRunner } from 'typeorm';
import { DurableMigration } from './durable-migration';

/**
 * One index for keys instead of two. `runs_key` holds every keyed run under (workflow, key) and
 * enforces one holder per key: its third column is `true` for the holder and NULL for the others,
 * and NULLs never collide in a unique index. It replaces the unique `runs_key_holder` (holders
 * only) and `runs_by_key` (all keyed runs), so a keyed start maintains one text index, not two.
 * Statements find the holder with `(holds_key OR NULL) IS TRUE`, which the index answers directly.
 */
export class DurableKeyIndex1733040005000 extends DurableMigration {
  name = 'DurableKeyIndex1733040005000';

  async up(q: QueryRunner): Promise<void> {
    const { s } = this;
    await q.query(`CREATE UNIQUE INDEX IF NOT EXISTS runs_key ON ${s}.runs (workflow, key, (holds_key OR NULL)) WHERE key IS NOT NULL`);
    await q.query(`DROP INDEX IF EXISTS ${s}.runs_key_holder`);
    await q.query(`DROP INDEX IF EXISTS ${s}.runs_by_key`);
  }

  async down(q: QueryRunner): Promise<void> {
    const { s } = this;
    await q.query(`CREATE UNIQUE INDEX IF NOT EXISTS runs_key_holder ON ${s}.runs (workflow, key) WHERE holds_key`);
    await q.query(`CREATE INDEX IF NOT EXISTS runs_by_key ON ${s}.runs (workflow, key) WHERE key IS NOT NULL`);
    await q.query(`DROP INDEX IF EXISTS ${s}.runs_key`);
  }
}
