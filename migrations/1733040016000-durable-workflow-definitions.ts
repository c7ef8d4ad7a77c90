import type { QueryRunner } from 'typeorm';
import { DurableMigration } from './durable-migration';

/**
 * The workflow definitions the app nodes run, one row per workflow name, written by each node at
 * boot (the last node to boot wins, and is recorded with it): what a command outside the app (the
 * operator CLI's `keys explain`) needs of a definition — its key rules — plus facts for operators.
 * A new table: nothing is rewritten.
 */
export class DurableWorkflowDefinitions1733040016000 extends DurableMigration {
  name = 'DurableWorkflowDefinitions1733040016000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE IF NOT EXISTS ${this.s}.workflow_definitions (
        workflow text PRIMARY KEY,
        reuse text NOT NULL,
        on_duplicate jsonb NOT NULL,
        debounce jsonb,
        steps text[] NOT NULL,
        hash text NOT NULL,
        node_id text NOT NULL,
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS ${this.s}.workflow_definitions`);
  }
}
