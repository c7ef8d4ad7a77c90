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

/**
 * The timeout sweep reads runs never claimed through an index that leaves out the flow nodes
 * waiting for their deps: a flow whose nodes wait past their workflow's timeout no longer makes
 * every maintenance pass read them all. On a big table run `npx nestjs-durable migrate
 * --concurrently` first (docs/operations.md, "Upgrading").
 */
export class DurableTimeoutReadyIndex1733040027000 extends DurableMigration {
  name = 'DurableTimeoutReadyIndex1733040027000';

  async up(q: QueryRunner): Promise<void> {
    await this.createRunsIndexes(q, INDEXES);
    await this.dropIndexes(q, REPLACED);
  }

  async down(q: QueryRunner): Promise<void> {
    await this.createRunsIndexes(q, REPLACED);
    await this.dropIndexes(q, INDEXES);
  }
}
