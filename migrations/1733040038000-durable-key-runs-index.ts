import { IndexSwapMigration, type IndexDefinition } from './durable-migration';

/** The index of this migration, built by `up` (and by `migrate --concurrently` first). */
const INDEXES: IndexDefinition[] = [['runs_key_runs', '(workflow, key, id) WHERE key IS NOT NULL']];

/**
 * A key's runs in id order: a page of `listRuns({ key })` (the CLI's `runs list --key`, the
 * dashboard's page of a keyed run and its `key:` search) is one range of `runs_key_runs`, however
 * many runs the key has and wherever they are in the history. Through `runs_key` (no id) a page
 * read every run of the key, or walked the primary key through the history around them. Each
 * keyed run's row version gets one more index entry. On a big table run
 * `npx nestjs-durable migrate --concurrently` first (docs/operations.md, "Upgrading").
 */
export class DurableKeyRunsIndex1733040038000 extends IndexSwapMigration {
  name = 'DurableKeyRunsIndex1733040038000';

  protected readonly table = 'runs';
  protected readonly indexes = INDEXES;
}
