import type { QueryRunner } from 'typeorm';
import { DurableMigration } from './durable-migration';

/**
 * What the dashboard and `getRunHistory` read:
 * - `step_attempts`: one row per attempt of a step (completed, failed or suspended by a wait),
 *   written by the statement that records the attempt's outcome on the run (no foreign key: no
 *   check per write); the statement that prunes a run deletes its attempts;
 * - `runs_workflow_status` on (workflow, status, id): counts per workflow and status read a bounded
 *   slice of an index instead of the history, and a workflow's runs of one status page newest first.
 */
export class DurableHistory1733040007000 extends DurableMigration {
  name = 'DurableHistory1733040007000';

  async up(q: QueryRunner): Promise<void> {
    const { s } = this;
    await q.query(`
      CREATE TABLE IF NOT EXISTS ${s}.step_attempts (
        run_id      uuid NOT NULL,
        step        integer NOT NULL,
        attempt     integer NOT NULL,
        status      text NOT NULL,
        started_at  timestamptz NOT NULL,
        finished_at timestamptz NOT NULL,
        error       jsonb,
        node_id     text,
        id          bigint GENERATED ALWAYS AS IDENTITY,
        PRIMARY KEY (run_id, id)
      )`);
    await q.query(`CREATE INDEX IF NOT EXISTS runs_workflow_status ON ${s}.runs (workflow, status, id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    const { s } = this;
    await q.query(`DROP INDEX IF EXISTS ${s}.runs_workflow_status`);
    await q.query(`DROP TABLE IF EXISTS ${s}.step_attempts`);
  }
}
