import type { QueryRunner } from 'typeorm';
import { DurableMigration } from './durable-migration';

/**
 * Queue controls:
 * - `workflow_controls`: one row per workflow an operator paused (or resumed): the claim skips the
 *   runs of a paused workflow on every node;
 * - `runs.priority` (default 0): the claim takes due runs of higher priority first. Runs of
 *   priority 0 are still claimed through `runs_pending`; the others through
 *   `runs_pending_priority`, a partial index that holds only them (empty unless priorities are used);
 * - `runs.progress`: the JSON value a step reported with `ctx.progress`, written with the heartbeat;
 * - `runs.group_key`: for runs of a workflow with a concurrency or rate limit only (NULL otherwise),
 *   the group its limits count it in ('' for the whole workflow). Three partial indexes hold only
 *   such runs: `runs_group_open` (groups with runs to claim, read by a skip scan), `runs_group_running`
 *   (running runs per group) and `runs_group_started` (runs begun per group, for rate limits), plus
 *   `runs_group_started_all` for a rate limit of the whole workflow.
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
    await q.query(`CREATE INDEX IF NOT EXISTS runs_pending_priority ON ${s}.runs (workflow, priority DESC, run_at) WHERE status = 'pending' AND priority <> 0`);
    await q.query(`ALTER TABLE ${s}.runs ADD COLUMN IF NOT EXISTS group_key text`);
    await q.query(
      `CREATE INDEX IF NOT EXISTS runs_group_open ON ${s}.runs (workflow, group_key) WHERE group_key IS NOT NULL AND status IN ('pending', 'waiting', 'compensating')`,
    );
    await q.query(`CREATE INDEX IF NOT EXISTS runs_group_running ON ${s}.runs (workflow, group_key) WHERE group_key IS NOT NULL AND status = 'running'`);
    await q.query(
      `CREATE INDEX IF NOT EXISTS runs_group_started ON ${s}.runs (workflow, group_key, started_at) WHERE group_key IS NOT NULL AND started_at IS NOT NULL`,
    );
    await q.query(
      `CREATE INDEX IF NOT EXISTS runs_group_started_all ON ${s}.runs (workflow, started_at) WHERE group_key IS NOT NULL AND started_at IS NOT NULL`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    const { s } = this;
    for (const index of ['runs_group_started_all', 'runs_group_started', 'runs_group_running', 'runs_group_open', 'runs_pending_priority']) {
      await q.query(`DROP INDEX IF EXISTS ${s}.${index}`);
    }
    await q.query(`ALTER TABLE ${s}.runs DROP COLUMN IF EXISTS group_key`);
    await q.query(`ALTER TABLE ${s}.runs DROP COLUMN IF EXISTS progress`);
    await q.query(`ALTER TABLE ${s}.runs DROP COLUMN IF EXISTS priority`);
    await q.query(`DROP TABLE IF EXISTS ${s}.workflow_controls`);
  }
}
