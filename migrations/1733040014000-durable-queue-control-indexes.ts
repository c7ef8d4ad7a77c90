import type { QueryRunner } from 'typeorm';
import { DurableMigration } from './durable-migration';

/** The indexes of this migration, each built by `up` (and by `migrate --concurrently` first). */
const INDEXES: [name: string, definition: string][] = [
  // due runs of priority ≠ 0 (those of priority 0 are still claimed through `runs_pending`): empty unless priorities are used
  ['runs_pending_priority', `(workflow, priority DESC, run_at) WHERE status = 'pending' AND priority <> 0`],
  // the next four hold only runs of workflows with a concurrency or rate limit (group_key set):
  // groups with runs to claim (read by a skip scan), running runs per group, runs begun per group
  // (rate limits), and runs begun per workflow (a rate limit of the whole workflow)
  ['runs_group_open', `(workflow, group_key) WHERE group_key IS NOT NULL AND status IN ('pending', 'waiting', 'compensating')`],
  ['runs_group_running', `(workflow, group_key) WHERE group_key IS NOT NULL AND status = 'running'`],
  ['runs_group_started', `(workflow, group_key, started_at) WHERE group_key IS NOT NULL AND started_at IS NOT NULL`],
  ['runs_group_started_all', `(workflow, started_at) WHERE group_key IS NOT NULL AND started_at IS NOT NULL`],
];

/**
 * The partial indexes of the queue controls, on the columns the previous migration added. A plain
 * `CREATE INDEX` blocks writes to `runs` while it builds; on a big table run
 * `npx nestjs-durable migrate --concurrently` first (docs/operations.md, "Upgrading").
 */
export class DurableQueueControlIndexes1733040014000 extends DurableMigration {
  name = 'DurableQueueControlIndexes1733040014000';

  async up(q: QueryRunner): Promise<void> {
    await this.createRunsIndexes(q, INDEXES);
  }

  async down(q: QueryRunner): Promise<void> {
    await this.dropIndexes(q, INDEXES);
  }
}
