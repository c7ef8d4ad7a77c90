import type { QueryRunner } from 'typeorm';
import { DurableMigration } from './durable-migration';

/** The index on `runs` of this migration, built by `up` (and by `migrate --concurrently` first). */
const RUNS_INDEXES: [name: string, definition: string][] = [
  // the holders of a workflow's keys, counted from the index alone (the predicate is `holdsKey`)
  ['runs_key_held', `(workflow) WHERE key IS NOT NULL AND (holds_key OR NULL) IS TRUE`],
];

/**
 * What `keyStats` reads, without reading a record's `details`: the outcome of a duplicate and
 * whether its input differed, as columns `outcome` and `input_changed` that PostgreSQL computes from
 * `details` on every insert (stored generated columns: adding them rewrites `activity`, which holds
 * only `retention.activity` of key events); the key events of a workflow in an index that carries
 * them (`activity_key_stats`); and the holders of its keys (`runs_key_held`). On a big `runs` table
 * run `npx nestjs-durable migrate --concurrently` first (docs/operations.md, "Upgrading").
 */
export class DurableKeyStats1733040018000 extends DurableMigration {
  name = 'DurableKeyStats1733040018000';

  async up(q: QueryRunner): Promise<void> {
    await this.createRunsIndexes(q, RUNS_INDEXES);
    await q.query(`
      ALTER TABLE ${this.s}.activity
        ADD COLUMN IF NOT EXISTS outcome text GENERATED ALWAYS AS (details->>'outcome') STORED,
        ADD COLUMN IF NOT EXISTS input_changed boolean GENERATED ALWAYS AS ((details->>'inputChanged')::boolean) STORED`);
    await q.query(`
      CREATE INDEX IF NOT EXISTS activity_key_stats ON ${this.s}.activity (workflow, kind, key) INCLUDE (at, outcome, input_changed)
      WHERE kind IN ('key_duplicate', 'key_handed_off')`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX IF EXISTS ${this.s}.activity_key_stats`);
    await q.query(`ALTER TABLE ${this.s}.activity DROP COLUMN IF EXISTS input_changed, DROP COLUMN IF EXISTS outcome`);
    await this.dropIndexes(q, RUNS_INDEXES);
  }
}
