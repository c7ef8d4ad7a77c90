import type { QueryRunner } from 'typeorm';
import { cancelChildrenWhen, childFinishedByScan } from './child-triggers';
import { DurableMigration } from './durable-migration';

/**
 * What waits, sagas and child runs need:
 * - on `runs`: what a `waiting` run waits for (`wait_kind`, `wait_name`) and when its timer ends
 *   (`wake_at`, claimable from then on), `inbox` (events/input kept or children finished while the
 *   run was mid-step, so a suspension that races them resumes at once), the compensation cursor
 *   (`comp_step`) and `has_children`;
 * - `events`: events and provided input per run (`received_at` marks the one a wait got);
 * - `waits`: each wait call of a step, by (run, step, call): a sleep's end, a wait's deadline, the
 *   children a call started — so a step that runs again neither sleeps again nor starts a second child;
 * - triggers: a child's end wakes its waiting parent in the same transaction; a parent that ends
 *   (cancelled, failed, compensating) cancels its unfinished children.
 * Every statement is idempotent.
 */
export class DurableWaits1733040002000 extends DurableMigration {
  name = 'DurableWaits1733040002000';

  async up(q: QueryRunner): Promise<void> {
    const { s, channel } = this;
    await q.query(`
      ALTER TABLE ${s}.runs
        ADD COLUMN IF NOT EXISTS wait_kind text,
        ADD COLUMN IF NOT EXISTS wait_name text,
        ADD COLUMN IF NOT EXISTS wake_at timestamptz,
        ADD COLUMN IF NOT EXISTS inbox text[] NOT NULL DEFAULT '{}',
        ADD COLUMN IF NOT EXISTS comp_step integer,
        ADD COLUMN IF NOT EXISTS has_children boolean NOT NULL DEFAULT false`);
    await q.query(`CREATE INDEX IF NOT EXISTS runs_wake ON ${s}.runs (wake_at) WHERE status = 'waiting'`);
    await q.query(`CREATE INDEX IF NOT EXISTS runs_compensating ON ${s}.runs (node_id, run_at) WHERE status = 'compensating'`);
    await q.query(`
      CREATE TABLE IF NOT EXISTS ${s}.events (
        id          bigserial PRIMARY KEY,
        run_id      uuid NOT NULL REFERENCES ${s}.runs (id) ON DELETE CASCADE,
        kind        text NOT NULL,
        name        text NOT NULL,
        payload     jsonb,
        created_at  timestamptz NOT NULL DEFAULT now(),
        received_at timestamptz
      )`);
    await q.query(`CREATE INDEX IF NOT EXISTS events_by_run ON ${s}.events (run_id, kind, name, id)`);
    await q.query(`CREATE UNIQUE INDEX IF NOT EXISTS events_received ON ${s}.events (run_id, kind, name) WHERE received_at IS NOT NULL`);
    await q.query(`
      CREATE TABLE IF NOT EXISTS ${s}.waits (
        run_id     uuid NOT NULL REFERENCES ${s}.runs (id) ON DELETE CASCADE,
        step       integer NOT NULL,
        call       integer NOT NULL,
        kind       text NOT NULL,
        name       text,
        until      timestamptz,
        children   uuid[],
        timed_out  boolean NOT NULL DEFAULT false,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (run_id, step, call)
      )`);
    await q.query(childFinishedByScan(s, channel));
    await q.query(`DROP TRIGGER IF EXISTS runs_child_finished ON ${s}.runs`);
    await q.query(`
      CREATE TRIGGER runs_child_finished AFTER UPDATE OF status ON ${s}.runs
      FOR EACH ROW WHEN (NEW.parent_id IS NOT NULL AND OLD.status IS DISTINCT FROM NEW.status
        AND NEW.status IN ('completed', 'failed', 'cancelled', 'compensated', 'compensation_failed'))
      EXECUTE FUNCTION ${s}.durable_child_finished()`);
    await q.query(`
      CREATE OR REPLACE FUNCTION ${s}.durable_cancel_children() RETURNS trigger LANGUAGE plpgsql AS $fn$
      BEGIN
        UPDATE ${s}.runs SET status = 'cancelled', finished_at = now(),
          cancel_reason = 'parent ' || NEW.id || ' ' || NEW.status,
          error = jsonb_build_object('name', 'CancelledError', 'code', 'cancelled', 'parentId', NEW.id,
            'message', 'its parent run ' || NEW.id || ' was ' || NEW.status)
        WHERE parent_id = NEW.id AND status IN ('pending', 'running', 'waiting');
        RETURN NULL;
      END
      $fn$`);
    await cancelChildrenWhen(q, s, `('cancelled', 'failed', 'compensating')`);
  }

  async down(q: QueryRunner): Promise<void> {
    const { s } = this;
    await q.query(`DROP TRIGGER IF EXISTS runs_cancel_children ON ${s}.runs`);
    await q.query(`DROP TRIGGER IF EXISTS runs_child_finished ON ${s}.runs`);
    await q.query(`DROP FUNCTION IF EXISTS ${s}.durable_cancel_children()`);
    await q.query(`DROP FUNCTION IF EXISTS ${s}.durable_child_finished()`);
    await q.query(`DROP TABLE IF EXISTS ${s}.waits`);
    await q.query(`DROP TABLE IF EXISTS ${s}.events`);
    await q.query(`DROP INDEX IF EXISTS ${s}.runs_compensating`);
    await q.query(`DROP INDEX IF EXISTS ${s}.runs_wake`);
    await q.query(`
      ALTER TABLE ${s}.runs DROP COLUMN IF EXISTS has_children, DROP COLUMN IF EXISTS comp_step,
        DROP COLUMN IF EXISTS inbox, DROP COLUMN IF EXISTS wake_at, DROP COLUMN IF EXISTS wait_name,
        DROP COLUMN IF EXISTS wait_kind`);
  }
}
