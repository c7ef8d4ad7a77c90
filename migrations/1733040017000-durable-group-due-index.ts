import type { QueryRunner } from 'typeorm';
import { DurableMigration } from './durable-migration';

/** The indexes of this migration, each built by `up` (and by `migrate --concurrently` first). */
const INDEXES: [name: string, definition: string][] = [
  // pending runs of a group in claim order: the claim reads the first of each group, no sort
  ['runs_group_due', `(workflow, group_key, priority DESC, run_at) WHERE group_key IS NOT NULL AND status = 'pending'`],
  // waiting and compensating runs of a group: a group without any costs its claim one empty probe
  ['runs_group_woken', `(workflow, group_key) WHERE group_key IS NOT NULL AND status IN ('waiting', 'compensating')`],
];

/**
 * The indexes through which the claim of a limited workflow (concurrency or rate limit; their runs
 * have `group_key` set, no other run is in them) reads each group's due runs. On a big table run
 * `npx nestjs-durable migrate --concurrently` first (docs/operations.md, "Upgrading").
 */
export class DurableGroupDueIndex1733040017000 extends DurableMigration {
  name = 'DurableGroupDueIndex1733040017000';

  async up(q: QueryRunner): Promise<void> {
    await this.createRunsIndexes(q, INDEXES);
  }

  async down(q: QueryRunner): Promise<void> {
    await this.dropIndexes(q, INDEXES);
  }
}
