import type { QueryRunner } from 'typeorm';
import { DurableMigration } from './durable-migration';

/** The index of this migration, built by `up` (and by `migrate --concurrently` first). */
const INDEXES: [name: string, definition: string][] = [
  // the runs of a group that hold a place under a concurrency limit: running, or compensating on a node
  ['runs_group_busy', `(workflow, group_key) WHERE group_key IS NOT NULL AND (status = 'running' OR (status = 'compensating' AND node_id IS NOT NULL))`],
];

/** The index it replaces: running runs only. */
const REPLACED: [name: string, definition: string][] = [['runs_group_running', `(workflow, group_key) WHERE group_key IS NOT NULL AND status = 'running'`]];

/**
 * A run compensating on a node holds its place under a concurrency limit: the claim of a limited
 * workflow counts a group's places through one index that holds both kinds of run. On a big table
 * run `npx nestjs-durable migrate --concurrently` first (docs/operations.md, "Upgrading").
 */
export class DurableGroupBusyIndex1733040021000 extends DurableMigration {
  name = 'DurableGroupBusyIndex1733040021000';

  async up(q: QueryRunner): Promise<void> {
    await this.createRunsIndexes(q, INDEXES);
    await this.dropIndexes(q, REPLACED);
  }

  async down(q: QueryRunner): Promise<void> {
    await this.createRunsIndexes(q, REPLACED);
    await this.dropIndexes(q, INDEXES);
  }
}
