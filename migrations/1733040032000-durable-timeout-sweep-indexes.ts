import { IndexSwapMigration, type IndexDefinition } from './durable-migration';

/** The indexes of this migration, built by `up` (and by `migrate --concurrently` first). */
const INDEXES: IndexDefinition[] = [
  // runs claimed before and not finished, by workflow then deadline: the sweep reads the runs of
  // each workflow past their deadline, and of a workflow it cannot time out, none
  ['runs_deadline_workflow', `(workflow, deadline_at) WHERE status IN ('pending', 'waiting') AND deadline_at IS NOT NULL`],
  // the same runs at their first step: of a workflow the sweep may time out only there (one the
  // node does not define), it reads these, not the runs past their first step a pause holds
  ['runs_deadline_first_step', `(workflow, deadline_at) WHERE status IN ('pending', 'waiting') AND deadline_at IS NOT NULL AND step = 0`],
  // runs never claimed whose workflow has a timeout (flow nodes waiting for their deps left out), by
  // timeout then run_at: for each timeout, the runs due longer ago than it are exactly those past it
  [
    'runs_timeout_unclaimed_by_timeout',
    `(timeout_ms, run_at) WHERE status IN ('pending', 'waiting') AND timeout_ms IS NOT NULL AND deadline_at IS NULL AND coalesce(deps_left, 0) = 0`,
  ],
];

/** The indexes they replace, by deadline alone and by run_at alone. */
const REPLACED: IndexDefinition[] = [
  ['runs_deadline', `(deadline_at) WHERE status IN ('pending', 'waiting') AND deadline_at IS NOT NULL`],
  [
    'runs_timeout_unclaimed_ready',
    `(run_at) WHERE status IN ('pending', 'waiting') AND timeout_ms IS NOT NULL AND deadline_at IS NULL AND coalesce(deps_left, 0) = 0`,
  ],
];

/**
 * The timeout sweep reads only the runs it times out. Through the indexes it replaces, it read at
 * each maintenance pass every run past its deadline that it may not time out (a run past its first
 * step whose workflow the maintenance node does not define: its compensations are unknown there),
 * and every run never claimed that was due longer ago than the node's shortest workflow timeout
 * but not past its own: a paused workflow's held runs were read again at every pass while the
 * pause lasted. On a big table run `npx nestjs-durable migrate --concurrently` first
 * (docs/operations.md, "Upgrading").
 */
export class DurableTimeoutSweepIndexes1733040032000 extends IndexSwapMigration {
  name = 'DurableTimeoutSweepIndexes1733040032000';

  protected readonly table = 'runs';
  protected readonly indexes = INDEXES;
  protected readonly replaced = REPLACED;
}
