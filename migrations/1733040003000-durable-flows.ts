import type { QueryRunner } from 'typeorm';
import { DurableMigration } from './durable-migration';
import { flowResolveFunction } from './flow-resolve-function';

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

    // One call per UPDATE statement, not per row: a batch of finished parents of one flow is
    // resolved together (a fan-in child is updated once per batch, not once per parent).
    await q.query(`
      CREATE OR REPLACE FUNCTION ${s}.durable_flow_on_finish() RETURNS trigger
      LANGUAGE plpgsql AS $fn$
      DECLARE
        f record;
      BEGIN
        -- rows cancelled by durable_flow_resolve itself: its loop handles their dependants
        IF current_setting('durable.flow_resolving', true) = 'on' THEN RETURN NULL; END IF;
        IF NOT EXISTS (SELECT 1 FROM new_rows n WHERE n.flow_id IS NOT NULL
                         AND n.status IN ('completed', 'failed', 'cancelled', 'compensated', 'compensation_failed')) THEN
          RETURN NULL;
        END IF;
        FOR f IN
          SELECT n.flow_id, array_agg(n.name) AS names,
            array_agg(CASE n.status WHEN 'completed' THEN 'completed' WHEN 'cancelled' THEN 'cancelled' ELSE 'failed' END) AS outcomes
          FROM new_rows n JOIN old_rows o ON o.id = n.id
          WHERE n.flow_id IS NOT NULL AND o.status IS DISTINCT FROM n.status
            AND n.status IN ('completed', 'failed', 'cancelled', 'compensated', 'compensation_failed')
          GROUP BY n.flow_id ORDER BY n.flow_id
        LOOP
          PERFORM ${s}.durable_flow_resolve(f.flow_id, f.names, f.outcomes);
        END LOOP;
        RETURN NULL;
      END
      $fn$`);
    // Deleted runs (pruning, or by hand): their edges and hooks go too (no foreign keys: one
    // statement per DELETE instead of a check per inserted edge); unfinished deleted nodes count
    // as `deleted` for their dependants.
    await q.query(`
      CREATE OR REPLACE FUNCTION ${s}.durable_flow_on_delete() RETURNS trigger
      LANGUAGE plpgsql AS $fn$
      DECLARE
        f record;
      BEGIN
        IF NOT EXISTS (SELECT 1 FROM old_rows o WHERE o.flow_id IS NOT NULL) THEN RETURN NULL; END IF;
        DELETE FROM ${s}.flow_deps d USING old_rows o WHERE o.flow_id IS NOT NULL AND d.run_id = o.id;
        DELETE FROM ${s}.flow_hooks h USING old_rows o WHERE o.flow_id IS NOT NULL AND h.run_id = o.id;
        FOR f IN
          SELECT o.flow_id, array_agg(o.name) AS names FROM old_rows o
          WHERE o.flow_id IS NOT NULL
            AND o.status NOT IN ('completed', 'failed', 'cancelled', 'compensated', 'compensation_failed')
          GROUP BY o.flow_id ORDER BY o.flow_id
        LOOP
          PERFORM ${s}.durable_flow_resolve(f.flow_id, f.names, array_fill('deleted'::text, ARRAY[cardinality(f.names)]));
        END LOOP;
        RETURN NULL;
      END
      $fn$`);
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
