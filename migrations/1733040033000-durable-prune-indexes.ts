import type { QueryRunner } from 'typeorm';
import { DurableMigration } from './durable-migration';

/** The indexes of this migration, built by `up` (and by `migrate --concurrently` first). */
const INDEXES: [name: string, definition: string][] = [
  // finished runs that are not key tombstones, by when they finished: what pruning reads to delete
  // or to turn into tombstones, the runs finished lately (the overview), what the triggers cancelled
  ['runs_finished_live', `(finished_at) WHERE finished_at IS NOT NULL AND pruned_at IS NULL`],
  // key tombstones: those whose key was released, and those keeping it, by when they finished (the
  // key horizon counts from then)
  ['runs_tombstones', `(holds_key, finished_at) WHERE pruned_at IS NOT NULL`],
];

/** The index it replaces: every finished run, tombstones included. */
const REPLACED: [name: string, definition: string][] = [['runs_finished', `(finished_at) WHERE finished_at IS NOT NULL`]];

/**
 * Pruning reads only what it prunes. Through `runs_finished`, each prune read every key tombstone
 * (a run past `retention.runs` kept until `retention.keys` for its key) before the finished runs
 * due, at least once a minute: with a key horizon much longer than the runs' retention that is most
 * of the table. Tombstones now have their own index, and the other finished runs theirs. On a big
 * table run `npx nestjs-durable migrate --concurrently` first (docs/operations.md, "Upgrading").
 */
export class DurablePruneIndexes1733040033000 extends DurableMigration {
  name = 'DurablePruneIndexes1733040033000';

  async up(q: QueryRunner): Promise<void> {
    await this.createRunsIndexes(q, INDEXES);
    await this.dropIndexes(q, REPLACED);
  }

  async down(q: QueryRunner): Promise<void> {
    await this.createRunsIndexes(q, REPLACED);
    await this.dropIndexes(q, INDEXES);
  }
}
