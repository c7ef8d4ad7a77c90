import { IndexSwapMigration, type IndexDefinition } from './durable-migration';

/** The index of this migration, built by `up` (and by `migrate --concurrently` first). */
const INDEXES: IndexDefinition[] = [['runs_key_holders', '(workflow, key) WHERE key IS NOT NULL AND (holds_key OR NULL) IS TRUE']];

/** The index it replaces. */
const REPLACED: IndexDefinition[] = [['runs_key_held', '(workflow) WHERE key IS NOT NULL AND (holds_key OR NULL) IS TRUE']];

/**
 * The holders of a workflow's keys, by key: `keyStats` counts them from the index alone as before,
 * and a keyed start's probe for its key's holder is one descent whichever of the key indexes the
 * planner picks. Through `runs_key_held` (the workflow alone) the probe read every holder of the
 * workflow, filtering on the key, which the planner chose where the statistics were behind (a
 * table truncated after an ANALYZE): a startMany of fresh keys then grew with the square of the
 * table. On a big table run `npx nestjs-durable migrate --concurrently` first (docs/operations.md,
 * "Upgrading").
 */
export class DurableKeyHoldersIndex1733040039000 extends IndexSwapMigration {
  name = 'DurableKeyHoldersIndex1733040039000';

  protected readonly table = 'runs';
  protected readonly indexes = INDEXES;
  protected readonly replaced = REPLACED;
}
