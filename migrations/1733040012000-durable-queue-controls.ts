import type { QueryRunner } from 'typeorm';
import { DurableMigration } from './durable-migration';

/**
 * Queue controls (their indexes come in the next migration, so that `migrate --concurrently` can
 * build them without blocking writes once these columns exist):
 * - `workflow_controls`: one row per workflow an operator paused (or resumed): the claim skips the
 *   runs of a paused workflow on every node;
 * - `runs.priority` (default 0): the claim takes due runs of higher priority first;
 * - `runs.progress`: the JSON value a step reported with `ctx.progress`, written with the heartbeat;
 * - `runs.group_key`: for runs of a workflow with a concurrency or rate limit only (NULL otherwise),
 *   the group its limits count it in ('' for the whole workflow).
 * Adding a column with a constant default (or none) rewrites no rows.
 */
export class DurableQueueControls1733040012000 extends DurableMigration {
  name = 'DurableQueueControls1733040012000';

  async up(q: QueryRunner): Promise<void> {
    const { s } = this;
    await q.query(`
      CREATE TABLE IF NOT EXISTS ${s}.workflow_controls (
        workflow   text PRIMARY KEY,
        paused     boolean NOT NULL DEFAULT false,
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`ALTER TABLE ${s}.runs ADD COLUMN IF NOT EXISTS priority integer NOT NULL DEFAULT 0`);
    await q.query(`ALTER TABLE ${s}.runs ADD COLUMN IF NOT EXISTS progress jsonb`);
    await q.query(`ALTER TABLE ${s}.runs ADD COLUMN IF NOT EXISTS group_key text`);
  }

  async down(q: QueryRunner): Promise<void> {
    const { s } = this;
    await q.query(`ALTER TABLE ${s}.runs DROP COLUMN IF EXISTS group_key`);
    await q.query(`ALTER TABLE ${s}.runs DROP COLUMN IF EXISTS progress`);
    await q.query(`ALTER TABLE ${s}.runs DROP COLUMN IF EXISTS priority`);
    await q.query(`DROP TABLE IF EXISTS ${s}.workflow_controls`);
  }
}
