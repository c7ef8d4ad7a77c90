import { IndexSwapMigration, type IndexDefinition } from './durable-migration';

/** Runs never claimed (since their start or their retry) whose workflow has a timeout, flow nodes waiting for their deps left out. */
const UNCLAIMED = `status IN ('pending', 'waiting') AND timeout_ms IS NOT NULL AND deadline_at IS NULL AND coalesce(deps_left, 0) = 0`;

/** The indexes of this migration, built by `up` (and by `migrate --concurrently` first). */
const INDEXES: IndexDefinition[] = [
  // those at their first step, by timeout then run_at: for each timeout, the runs due longer ago
  // than it are exactly those past it, and the sweep may time out any of them
  ['runs_timeout_unclaimed_first_step', `(timeout_ms, run_at) WHERE ${UNCLAIMED} AND step = 0`],
  // those past their first step (retried runs), by workflow, timeout then run_at: the sweep reads
  // only those of the workflows it may time out at any step
  ['runs_timeout_retried', `(workflow, timeout_ms, run_at) WHERE ${UNCLAIMED} AND step > 0`],
];

/** The index they replace: every run never claimed, at any step, by timeout then run_at. */
const REPLACED: IndexDefinition[] = [['runs_timeout_unclaimed_by_timeout', `(timeout_ms, run_at) WHERE ${UNCLAIMED}`]];

/**
 * The timeout sweep reads only the retried runs it times out. A retried run is pending again at the
 * step it failed at, with no deadline until a claim gives it one; through the index this replaces,
 * the sweep read at every maintenance pass each retried run past its timeout and past its first
 * step of a workflow the maintenance node does not define (its compensations are unknown there, so
 * it may not time it out): held by a pause, or waiting for a node that defines it. On a big table
 * run `npx nestjs-durable migrate --concurrently` first (docs/operations.md, "Upgrading").
 */
export class DurableTimeoutRetriedIndex1733040036000 extends IndexSwapMigration {
  name = 'DurableTimeoutRetriedIndex1733040036000';

  protected readonly table = 'runs';
  protected readonly indexes = INDEXES;
  protected readonly replaced = REPLACED;
}
