import { IndexSwapMigration, type IndexDefinition } from './durable-migration';

/** The index of this migration, built by `up` (and by `migrate --concurrently` first). */
const INDEXES: IndexDefinition[] = [['events_receive', '(run_id, kind, name, created_at, id)']];

/** The index it replaces: a run's events of one name in id order. */
const REPLACED: IndexDefinition[] = [['events_by_run', '(run_id, kind, name, id)']];

/**
 * A waiting step reads its event, the newest kept before its wait's end, through `events_receive`
 * (by the send's moment): the events of that name kept after the wait's end (for a later wait, never
 * its answer) are no longer read one by one each time. It replaces `events_by_run`, which served the
 * same reads in id order. On a big table run `npx nestjs-durable migrate --concurrently` first
 * (docs/operations.md, "Upgrading").
 */
export class DurableEventsReceiveIndex1733040031000 extends IndexSwapMigration {
  name = 'DurableEventsReceiveIndex1733040031000';

  protected readonly table = 'events';
  protected readonly indexes = INDEXES;
  protected readonly replaced = REPLACED;
}
