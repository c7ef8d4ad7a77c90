import { IndexSwapMigration, type IndexDefinition } from './durable-migration';

/** The index of this migration, built by `up` (and by `migrate --concurrently` first). */
const INDEXES: IndexDefinition[] = [
  // the runs of a group that hold a place under a concurrency limit: running, or compensating on a node
  ['runs_group_busy', `(workflow, group_key) WHERE group_key IS NOT NULL AND (status = 'running' OR (status = 'compensating' AND node_id IS NOT NULL))`],
];

/** The index it replaces: running runs only. */
const REPLACED: IndexDefinition[] = [['runs_group_running', `(workflow, group_key) WHERE group_key IS NOT NULL AND status = 'running'`]];

/**
 * A run compensating on a node holds its place under a concurrency limit: the claim of a limited
 * workflow counts a group's places through one index that holds both kinds of run. On a big table
 * run `npx nestjs-durable migrate --concurrently` first (docs/operations.md, "Upgrading").
 */
export class DurableGroupBusyIndex1733040021000 extends IndexSwapMigration {
  name = 'DurableGroupBusyIndex1733040021000';

  protected readonly table = 'runs';
  protected readonly indexes = INDEXES;
  protected readonly replaced = REPLACED;
}
