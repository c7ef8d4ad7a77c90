import { IndexSwapMigration, type IndexDefinition } from './durable-migration';

/** The index of this migration, built by `up` (and by `migrate --concurrently` first). */
const INDEXES: IndexDefinition[] = [['activity_kind', "(kind, at, id) WHERE kind <> 'key_duplicate'"]];

/**
 * The activity records of a kind other than `key_duplicate`, newest first: `listActivity({ kinds })`
 * (the CLI's `activity --kind`, the dashboard's activity filter) reads the records of such a kind,
 * not the whole log newest first looking for them among the duplicates, which are most of the log.
 * Duplicates, the records written by the hot path of keyed starts, get no entry. On a big log run
 * `npx nestjs-durable migrate --concurrently` first (docs/operations.md, "Upgrading").
 */
export class DurableActivityKindIndex1733040037000 extends IndexSwapMigration {
  name = 'DurableActivityKindIndex1733040037000';

  protected readonly table = 'activity';
  protected readonly indexes = INDEXES;
}
