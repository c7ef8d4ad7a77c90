import type { QueryRunner } from 'typeorm';
import { DurableMigration } from './durable-migration';
import { flowResolveFunction, flowTriggerFunctions } from './flow-resolution';

/**
 * DAG flows. A flow node is a run with `flow_id`/`name`/`deps`; this migration adds:
 *
 * - `runs.deps_left`: how many deps of a node are not yet resolved. A node with deps is inserted
 *   `waiting` with `deps_left > 0` (never claimable) and becomes `pending` when it reaches 0.
 * - `flows`: one row per flow id (uniqueness of custom ids, flow-level ignore options, last append).
 * - `flow_deps`: one row per edge (dep name → dependant run), with the dependant's resolved ignore
 *   options and whether the edge was resolved; `missing` marks deps that named no node when appended
 *   with `checkDeps: false`.
 * - `flow_hooks`: dependants cancelled by the cascade whose `afterCancelled` hook is still due.
 * - `durable_flow_resolve(flow, names, outcomes)`: resolves the edges leaving the named nodes —
 *   decrements (exact under concurrency: the dependant's row lock serialises its parents) or, per
 *   the ignore options, cancels dependants, iterating level by level (no trigger recursion), and
 *   notifies the workers when a node became pending.
 * - triggers calling it in the transaction of the change: `runs_flow_deps_trg` (statement level,
 *   with transition tables: the flow nodes an UPDATE moved to a final status, grouped by flow) and
 *   `runs_flow_deleted_trg` (statement level: deleted runs take their edges and hooks with them;
 *   unfinished deleted nodes count as `deleted`).
 *
 * Every statement is idempotent.
 */
export class DurableFlows1733040003000 extends DurableMigration {
  name = 'DurableFlows1733040003000';

  async up(q: QueryRunner): Promise<void> {
    const { s } = this;
    const channel = `durable_${this.schema}`.replace(/'/g, "''");
    await q.query(`ALTER TABLE ${s}.runs ADD COLUMN IF NOT EXISTS deps_left integer`);
    // node names are unique within a flow (replaces the plain index of the first migration)
    await q.query(`CREATE UNIQUE INDEX IF NOT EXISTS runs_flow_node ON ${s}.runs (flow_id, name) WHERE flow_id IS NOT NULL`);
    await q.query(`DROP INDEX IF EXISTS ${s}.runs_flow`);
    await q.query(`
      CREATE TABLE IF NOT EXISTS ${s}.flows (
        id               text PRIMARY KEY,
        name             text,
        ignore_cancelled boolean NOT NULL DEFAULT false,
        ignore_failed    boolean NOT NULL DEFAULT false,
        ignore_deleted   boolean NOT NULL DEFAULT false,
        created_at       timestamptz NOT NULL DEFAULT now(),
        updated_at       timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX IF NOT EXISTS flows_updated ON ${s}.flows (updated_at)`);
    await q.query(`
      CREATE TABLE IF NOT EXISTS ${s}.flow_deps (
        flow_id          text NOT NULL,
        dep_name         text NOT NULL,
        run_id           uuid NOT NULL,
        ignore_cancelled boolean NOT NULL DEFAULT false,
        ignore_failed    boolean NOT NULL DEFAULT false,
        ignore_deleted   boolean NOT NULL DEFAULT false,
        resolved         boolean NOT NULL DEFAULT false,
        missing          boolean NOT NULL DEFAULT false,
        PRIMARY KEY (flow_id, dep_name, run_id)
      )`);
    await q.query(`CREATE INDEX IF NOT EXISTS flow_deps_run ON ${s}.flow_deps (run_id)`);
    await q.query(`CREATE INDEX IF NOT EXISTS flow_deps_missing ON ${s}.flow_deps (flow_id) WHERE missing AND NOT resolved`);
    // the repair pass scans only open edges and nodes still waiting for deps
    await q.query(`CREATE INDEX IF NOT EXISTS flow_deps_open ON ${s}.flow_deps (flow_id, dep_name) WHERE NOT resolved`);
    await q.query(`CREATE INDEX IF NOT EXISTS runs_flow_waiting ON ${s}.runs (flow_id) WHERE status = 'waiting' AND deps_left > 0`);
    await q.query(`
      CREATE TABLE IF NOT EXISTS ${s}.flow_hooks (
        run_id uuid PRIMARY KEY,
        reason text NOT NULL,
        due_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX IF NOT EXISTS flow_hooks_due ON ${s}.flow_hooks (due_at)`);

    await q.query(flowResolveFunction(s, channel));

    for (const fn of flowTriggerFunctions(s, 'durable_flow_resolve')) await q.query(fn);
    await q.query(`DROP TRIGGER IF EXISTS runs_flow_deps_trg ON ${s}.runs`);
    await q.query(`
      CREATE TRIGGER runs_flow_deps_trg AFTER UPDATE ON ${s}.runs
      REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
      FOR EACH STATEMENT EXECUTE FUNCTION ${s}.durable_flow_on_finish()`);
    await q.query(`DROP TRIGGER IF EXISTS runs_flow_deleted_trg ON ${s}.runs`);
    await q.query(`
      CREATE TRIGGER runs_flow_deleted_trg AFTER DELETE ON ${s}.runs
      REFERENCING OLD TABLE AS old_rows
      FOR EACH STATEMENT EXECUTE FUNCTION ${s}.durable_flow_on_delete()`);
  }

  async down(q: QueryRunner): Promise<void> {
    const { s } = this;
    await q.query(`DROP TRIGGER IF EXISTS runs_flow_deps_trg ON ${s}.runs`);
    await q.query(`DROP TRIGGER IF EXISTS runs_flow_deleted_trg ON ${s}.runs`);
    await q.query(`DROP FUNCTION IF EXISTS ${s}.durable_flow_on_finish()`);
    await q.query(`DROP FUNCTION IF EXISTS ${s}.durable_flow_on_delete()`);
    await q.query(`DROP FUNCTION IF EXISTS ${s}.durable_flow_resolve(text, text[], text[])`);
    for (const t of ['flow_hooks', 'flow_deps', 'flows']) await q.query(`DROP TABLE IF EXISTS ${s}.${t}`);
    await q.query(`DROP INDEX IF EXISTS ${s}.runs_flow_node`);
    await q.query(`DROP INDEX IF EXISTS ${s}.runs_flow_waiting`);
    await q.query(`CREATE INDEX IF NOT EXISTS runs_flow ON ${s}.runs (flow_id, name) WHERE flow_id IS NOT NULL`);
    await q.query(`ALTER TABLE ${s}.runs DROP COLUMN IF EXISTS deps_left`);
  }
}
