import type { QueryRunner } from 'typeorm';
import { lastAttemptFields } from '../src/store/sql';
import { DurableMigration } from './durable-migration';

/** The index of this migration, built by `up` (and by `migrate --concurrently` first). */
const INDEXES: [name: string, definition: string][] = [
  // a workflow's runs of one status, newest first, for every status but the two a run passes
  // through on its way to a worker (pending: runs_pending; running: runs_running): starting and
  // claiming a run write no entry here, only its next status does
  ['runs_workflow_status_other', `(workflow, status, id) WHERE status NOT IN ('pending', 'running')`],
];

/** The columns of the attempt that ended a run (see `lastAttemptFields`); `last_status` is set with them. */
const LAST_ATTEMPT: [column: string, type: string][] = [
  ['last_step', 'integer'],
  ['last_attempt', 'integer'],
  ['last_status', 'text'],
  ['last_started_at', 'timestamptz'],
  ['last_finished_at', 'timestamptz'],
];

/** The index it replaces: an entry for every status a run takes. */
const REPLACED: [name: string, definition: string][] = [['runs_workflow_status', '(workflow, status, id)']];

/**
 * What the step-attempt record costs a run, made smaller:
 * - counts and pages of a workflow's runs by status read `runs_workflow_status_other` for waiting,
 *   compensating and finished runs and the claim's partial indexes for pending and running ones,
 *   instead of an index on every status: a one-step run writes one entry there (when it ends)
 *   instead of three;
 * - the attempt that ends a run is kept on the run's row (`last_step`, `last_attempt`,
 *   `last_status`, `last_started_at`, `last_finished_at`; its node and error are the run's),
 *   written by the update that ends it, instead of as a `step_attempts` row with its index entry;
 *   retrying a failed run moves it to `step_attempts`.
 * On a big table run `npx nestjs-durable migrate --concurrently` first (docs/operations.md, "Upgrading").
 */
export class DurableLeanHistory1733040019000 extends DurableMigration {
  name = 'DurableLeanHistory1733040019000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE ${this.s}.runs ${LAST_ATTEMPT.map(([c, type]) => `ADD COLUMN IF NOT EXISTS ${c} ${type}`).join(', ')}`);
    await this.createRunsIndexes(q, INDEXES);
    await this.dropIndexes(q, REPLACED);
  }

  async down(q: QueryRunner): Promise<void> {
    const { s } = this;
    await this.createRunsIndexes(q, REPLACED);
    await this.dropIndexes(q, INDEXES);
    // the runs' last attempts go back to step_attempts, oldest run first
    await q.query(`
      INSERT INTO ${s}.step_attempts (run_id, step, attempt, status, started_at, finished_at, error, node_id)
      SELECT a.run_id, a.step, a.attempt, a.status, a.started_at, a.finished_at, a.error, a.node_id
      FROM (SELECT r.id AS run_id, ${lastAttemptFields('r')} FROM ${s}.runs r WHERE r.last_status IS NOT NULL ORDER BY r.id) a`);
    await q.query(`ALTER TABLE ${s}.runs ${LAST_ATTEMPT.map(([c]) => `DROP COLUMN IF EXISTS ${c}`).join(', ')}`);
  }
}
