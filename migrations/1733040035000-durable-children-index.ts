import { IndexSwapMigration, type IndexDefinition } from './durable-migration';

/** The index of this migration, built by `up` (and by `migrate --concurrently` first). */
const INDEXES: IndexDefinition[] = [['runs_children', '(parent_id, id) WHERE parent_id IS NOT NULL']];

/** The index it replaces: a parent's children, in no particular order. */
const REPLACED: IndexDefinition[] = [['runs_parent', '(parent_id) WHERE parent_id IS NOT NULL']];

/**
 * A parent's children in id order: a run's page reads its first children by id, and counts them up
 * to a cap, in one range of `runs_children`, however many children the parent has. Through
 * `runs_parent` it had to read every child to find the first by id, so it linked the first of
 * those it counted instead. The other reads of a parent's children (cancelling them, waking the
 * parent, `getRun`, the search `parent:`) use it as they used `runs_parent`. On a big table run
 * `npx nestjs-durable migrate --concurrently` first (docs/operations.md, "Upgrading").
 */
export class DurableChildrenIndex1733040035000 extends IndexSwapMigration {
  name = 'DurableChildrenIndex1733040035000';

  protected readonly table = 'runs';
  protected readonly indexes = INDEXES;
  protected readonly replaced = REPLACED;
}
