import { IndexSwapMigration, type IndexDefinition } from './durable-migration';

/** The index of this migration, built by `up` (and by `migrate --concurrently` first). */
const INDEXES: IndexDefinition[] = [
  ['runs_group_begun_due', `(workflow, group_key, priority DESC, run_at) WHERE group_key IS NOT NULL AND status = 'pending' AND started_at IS NOT NULL`],
];

/**
 * The due runs of a limited workflow that have begun (a retry, a run given back), by group and
 * priority: the limited claim lets them go on within the concurrency limit without room in the
 * rate window, and reads them here without reading the group's backlog of runs that have not
 * begun. Only such runs have an entry (few at any time). On a big table run
 * `npx nestjs-durable migrate --concurrently` first (docs/operations.md, "Upgrading").
 */
export class DurableGroupBegunIndex1733040040000 extends IndexSwapMigration {
  name = 'DurableGroupBegunIndex1733040040000';

  protected readonly table = 'runs';
  protected readonly indexes = INDEXES;
}
