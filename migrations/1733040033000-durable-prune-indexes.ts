import { IndexSwapMigration, type IndexDefinition } from './durable-migration';

/** The indexes of this migration, built by `up` (and by `migrate --concurrently` first). */
const INDEXES: IndexDefinition[] = [
  // finished runs that are not key tombstones, by when they finished: what pruning reads to delete
  // or to turn into tombstones, the runs finished lately (the overview), what the triggers cancelled
  ['runs_finished_live', `(finished_at) WHERE finished_at IS NOT NULL AND pruned_at IS NULL`],
  // key tombstones: those whose key was released, and those keeping it, by when they finished (the
  // key horizon counts from then)
  ['runs_tombstones', `(holds_key, finished_at) WHERE pruned_at IS NOT NULL`],
];

/** The index it replaces: every finished run, tombstones included. */
const REPLACED: IndexDefinition[] = [['runs_finished', `(finished_at) WHERE finished_at IS NOT NULL`]];

/**
 * Pruning reads only what it prunes. Through `runs_finished`, each prune read every key tombstone
 * (a run past `retention.runs` kept until `retention.keys` for its key) before the finished runs
 * due, at least once a minute: with a key horizon much longer than the runs' retention that is most
 * of the table. Tombstones now have their own index, and the other finished runs theirs. On a big
 * table run `npx nestjs-durable migrate --concurrently` first (docs/operations.md, "Upgrading").
 */
export class DurablePruneIndexes1733040033000 extends IndexSwapMigration {
  name = 'DurablePruneIndexes1733040033000';

  protected readonly table = 'runs';
  protected readonly indexes = INDEXES;
  protected readonly replaced = REPLACED;
}
