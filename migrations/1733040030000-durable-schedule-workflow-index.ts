import type { QueryRunner } from 'typeorm';
import { DurableMigration } from './durable-migration';

/** The index of this migration, built by `up` (and by `migrate --concurrently` first). */
const INDEXES: [name: string, definition: string][] = [['schedules_workflow', '(workflow, name)']];

/**
 * One workflow's schedules in name order (a page of the dashboard's Schedules page for a workflow,
 * a workflow's page): read through `schedules_workflow`, so a workflow with few schedules costs what
 * it shows beside another with many (schedules made at runtime, one per tenant), instead of every
 * stored schedule being read on each refresh.
 */
export class DurableScheduleWorkflowIndex1733040030000 extends DurableMigration {
  name = 'DurableScheduleWorkflowIndex1733040030000';

  async up(q: QueryRunner): Promise<void> {
    for (const [name, definition] of INDEXES) await q.query(`CREATE INDEX IF NOT EXISTS ${name} ON ${this.s}.schedules ${definition}`);
  }

  async down(q: QueryRunner): Promise<void> {
    await this.dropIndexes(q, INDEXES);
  }
}
