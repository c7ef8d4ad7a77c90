import type { QueryRunner } from 'typeorm';
import { DurableMigration } from './durable-migration';

/**
 * What the engine needs to stay flat over a big history and to do its maintenance on one node:
 * - `leases`: named leases (the maintenance lease: one node at a time runs the maintenance pass);
 * - `runs_pending` on (workflow, run_at) for pending runs, replacing `runs_due` (run_at): a worker
 *   claims per workflow it runs, so a worker limited to some workflows never reads the others' backlog;
 * - `runs_deadline` and `runs_timeout_unclaimed`: the timeout sweep reads only runs whose workflow
 *   timeout may have passed, through these, instead of scanning `runs`.
 */
export class DurableEngine1733040006000 extends DurableMigration {
  name = 'DurableEngine1733040006000';

  async up(q: QueryRunner): Promise<void> {
    const { s } = this;
    await q.query(`
      CREATE TABLE IF NOT EXISTS ${s}.leases (
        name       text PRIMARY KEY,
        holder     text NOT NULL,
        expires_at timestamptz NOT NULL
      )`);
    await q.query(`CREATE INDEX IF NOT EXISTS runs_pending ON ${s}.runs (workflow, run_at) WHERE status = 'pending'`);
    await q.query(`DROP INDEX IF EXISTS ${s}.runs_due`);
    await q.query(`CREATE INDEX IF NOT EXISTS runs_deadline ON ${s}.runs (deadline_at) WHERE status IN ('pending', 'waiting') AND deadline_at IS NOT NULL`);
    await q.query(
      `CREATE INDEX IF NOT EXISTS runs_timeout_unclaimed ON ${s}.runs (run_at) WHERE status IN ('pending', 'waiting') AND timeout_ms IS NOT NULL AND deadline_at IS NULL`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    const { s } = this;
    await q.query(`DROP INDEX IF EXISTS ${s}.runs_timeout_unclaimed`);
    await q.query(`DROP INDEX IF EXISTS ${s}.runs_deadline`);
    await q.query(`CREATE INDEX IF NOT EXISTS runs_due ON ${s}.runs (run_at) WHERE status = 'pending'`);
    await q.query(`DROP INDEX IF EXISTS ${s}.runs_pending`);
    await q.query(`DROP TABLE IF EXISTS ${s}.leases`);
  }
}
