import type { QueryRunner } from 'typeorm';
import { DurableMigration } from './durable-migration';

/** The index of this migration, built by `up` (and by `migrate --concurrently` first). */
const INDEXES: [name: string, definition: string][] = [
  // runs never claimed whose workflow has a timeout, without the flow nodes still waiting for their
  // deps (the sweep does not time those out: however long a flow waits, they are not read)
  [
    'runs_timeout_unclaimed_ready',
    `(run_at) WHERE status IN ('pending', 'waiting') AND timeout_ms IS NOT NULL AND deadline_at IS NULL AND coalesce(deps_left, 0) = 0`,
  ],
];

/** The index it replaces: every such run, flow nodes waiting for their deps included. */
const REPLACED: [name: string, definition: string][] = [
  ['runs_timeout_unclaimed', `(run_at) WHERE status IN ('pending', 'waiting') AND timeout_ms IS NOT NULL AND deadline_at IS NULL`],
];

/** The flows in the order the pruning of flow rows pages through them (replacing `flows_updated`). */
const FLOW_INDEXES: [name: string, definition: string][] = [['flows_updated_id', '(updated_at, id)']];
const FLOW_REPLACED: [name: string, definition: string][] = [['flows_updated', '(updated_at)']];

/**
 * The timeout sweep reads runs never claimed through an index that leaves out the flow nodes
 * waiting for their deps: a flow whose nodes wait past their workflow's timeout no longer makes
 * every maintenance pass read them all. The pruning of flow rows pages through the old flows in
 * (updated_at, id) order, through `flows_updated_id`, so a pass reads one page, not every old flow
 * whose runs are still kept. On a big table run `npx nestjs-durable migrate --concurrently` first
 * (docs/operations.md, "Upgrading").
 */
export class DurableFlowScanIndexes1733040027000 extends DurableMigration {
  name = 'DurableFlowScanIndexes1733040027000';

  async up(q: QueryRunner): Promise<void> {
    await this.createRunsIndexes(q, INDEXES);
    await this.dropIndexes(q, REPLACED);
    await this.createFlowIndexes(q, FLOW_INDEXES);
    await this.dropIndexes(q, FLOW_REPLACED);
  }

  async down(q: QueryRunner): Promise<void> {
    await this.createFlowIndexes(q, FLOW_REPLACED);
    await this.dropIndexes(q, FLOW_INDEXES);
    await this.createRunsIndexes(q, REPLACED);
    await this.dropIndexes(q, INDEXES);
  }

  /** Creates indexes on `flows`, re-runnably (`migrate --concurrently` builds them first). */
  private async createFlowIndexes(q: QueryRunner, indexes: [name: string, definition: string][]): Promise<void> {
    for (const [name, definition] of indexes) await q.query(`CREATE INDEX IF NOT EXISTS ${name} ON ${this.s}.flows ${definition}`);
  }
}
