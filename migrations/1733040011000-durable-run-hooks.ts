import type { QueryRunner } from 'typeorm';
import { DurableMigration } from './durable-migration';
import { runHooksOnFinish } from './run-hooks-trigger';

/**
 * Run lifecycle hooks (`onRunCompleted`, `onRunFailed`, `onRunCancelled`), on the queue of the
 * flows' `afterCancelled` hooks:
 *
 * - `flow_hooks` gets `hook` (which method is owed; `afterCancelled` for the rows it held so far)
 *   in its primary key, `attempts` (calls begun, for the back-off of a hook that throws) and
 *   `node_id` (the node calling it: a hook claimed by a node that stopped heartbeating is claimed
 *   again at once, not after its lease).
 * - `hook_workflows`: the workflows whose class has lifecycle hooks, and which (written by every
 *   node at startup from its definitions). Only runs of these workflows owe a hook: any other run
 *   ends as before, with no row and no write more.
 * - `runs_hooks_trg` (statement level, with transition tables): a run of such a workflow that an
 *   UPDATE moved to a final status owes its hook, recorded in the transaction that ended it —
 *   whichever statement ended it (a worker's finish, cancel, a timeout, a flow cascade).
 *
 * Every statement is idempotent.
 */
export class DurableRunHooks1733040011000 extends DurableMigration {
  name = 'DurableRunHooks1733040011000';

  async up(q: QueryRunner): Promise<void> {
    const { s } = this;
    await q.query(`ALTER TABLE ${s}.flow_hooks ADD COLUMN IF NOT EXISTS hook text NOT NULL DEFAULT 'afterCancelled'`);
    await q.query(`ALTER TABLE ${s}.flow_hooks ADD COLUMN IF NOT EXISTS attempts integer NOT NULL DEFAULT 0`);
    await q.query(`ALTER TABLE ${s}.flow_hooks ADD COLUMN IF NOT EXISTS node_id text`);
    await q.query(`ALTER TABLE ${s}.flow_hooks DROP CONSTRAINT IF EXISTS flow_hooks_pkey`);
    await q.query(`ALTER TABLE ${s}.flow_hooks ADD CONSTRAINT flow_hooks_pkey PRIMARY KEY (run_id, hook)`);
    await q.query(`CREATE TABLE IF NOT EXISTS ${s}.hook_workflows (workflow text PRIMARY KEY, hooks text[] NOT NULL)`);
    await q.query(runHooksOnFinish(s, false));
    await q.query(`DROP TRIGGER IF EXISTS runs_hooks_trg ON ${s}.runs`);
    await q.query(`
      CREATE TRIGGER runs_hooks_trg AFTER UPDATE ON ${s}.runs
      REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
      FOR EACH STATEMENT EXECUTE FUNCTION ${s}.durable_run_hooks_on_finish()`);
  }

  async down(q: QueryRunner): Promise<void> {
    const { s } = this;
    await q.query(`DROP TRIGGER IF EXISTS runs_hooks_trg ON ${s}.runs`);
    await q.query(`DROP FUNCTION IF EXISTS ${s}.durable_run_hooks_on_finish()`);
    await q.query(`DROP TABLE IF EXISTS ${s}.hook_workflows`);
    await q.query(`DELETE FROM ${s}.flow_hooks WHERE hook <> 'afterCancelled'`);
    await q.query(`ALTER TABLE ${s}.flow_hooks DROP CONSTRAINT IF EXISTS flow_hooks_pkey`);
    await q.query(`ALTER TABLE ${s}.flow_hooks ADD CONSTRAINT flow_hooks_pkey PRIMARY KEY (run_id)`);
    for (const c of ['hook', 'attempts', 'node_id']) await q.query(`ALTER TABLE ${s}.flow_hooks DROP COLUMN IF EXISTS ${c}`);
  }
}
