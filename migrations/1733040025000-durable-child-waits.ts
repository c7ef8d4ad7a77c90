import type { QueryRunner } from 'typeorm';
import { cancelChildrenWhen, childFinishedByScan } from './child-triggers';
import { DurableMigration } from './durable-migration';

const GOING = `('pending', 'running', 'waiting', 'compensating')`;
const ENDED = `('completed', 'failed', 'cancelled', 'compensated', 'compensation_failed')`;

/**
 * What a parent waits for is the children of its step's calls, counted:
 * - on a parent, `children_step` (the step whose children are counted), `children_wait` (the count's
 *   number: a new step's calls or a retry start a new count) and `children_open` (its children
 *   still going); on a child, `parent_wait` (the count it is in);
 * - `runs_child_finished`: a counted child's end lowers its count, and the parent wakes when its
 *   step's count reaches 0 (one row read and written per child end, however many children the
 *   parent has). A child outside the count (one a retry of its parent replaced) does not wake it;
 *   a child started before this migration (no `parent_wait`) wakes it when none is going;
 * - `runs_child_deleted`: a going child deleted is an end for its parent's count (it counts as failed);
 * - `runs_child_reopened`: a counted child retried while its parent goes on is counted again;
 * - `runs_children_recount`: a parent that ended and goes again (a retry, by whatever version of the
 *   module) starts a new count, so the children its end left counted as going hold it no more;
 * - `runs_cancel_children`: a parent that fails, is cancelled or compensated (or starts
 *   compensating, or its compensation fails) cancels its unfinished children, so a child a
 *   compensation started does not outlive its parent. A completed parent has none (its steps waited
 *   for theirs): one an operator retried after it ended is left to go on.
 * Nullable columns without defaults: added without rewriting the table, and a run that never has
 * children carries no bytes for them.
 */
export class DurableChildWaits1733040025000 extends DurableMigration {
  name = 'DurableChildWaits1733040025000';

  async up(q: QueryRunner): Promise<void> {
    const { s, channel } = this;
    await q.query(`
      ALTER TABLE ${s}.runs
        ADD COLUMN IF NOT EXISTS parent_wait integer,
        ADD COLUMN IF NOT EXISTS children_step integer,
        ADD COLUMN IF NOT EXISTS children_wait integer,
        ADD COLUMN IF NOT EXISTS children_open integer`);
    // only a parent that goes on keeps a count (a retry, its way back, starts a new one); the child
    // that ended is NEW, or OLD when it was deleted (NEW is null then)
    await q.query(`
      CREATE OR REPLACE FUNCTION ${s}.durable_child_finished() RETURNS trigger LANGUAGE plpgsql AS $fn$
      DECLARE
        c record;
        p record;
        counted boolean;
        done boolean;
      BEGIN
        IF TG_OP = 'DELETE' THEN
          c := OLD;
        ELSE
          c := NEW;
        END IF;
        SELECT id, status, wait_kind, step, children_step, children_wait, children_open INTO p
        FROM ${s}.runs WHERE id = c.parent_id FOR UPDATE;
        IF NOT FOUND OR p.status NOT IN ('pending', 'running', 'waiting') THEN
          RETURN NULL;
        END IF;
        counted := coalesce(c.parent_wait = p.children_wait, false);
        IF c.parent_wait IS NULL THEN
          done := NOT EXISTS (SELECT 1 FROM ${s}.runs k WHERE k.parent_id = p.id AND k.status IN ${GOING});
        ELSIF counted THEN
          done := coalesce(p.children_open, 0) <= 1 AND p.step = p.children_step;
        ELSE
          RETURN NULL;
        END IF;
        IF done AND p.status = 'waiting' AND p.wait_kind = 'children' THEN
          UPDATE ${s}.runs SET status = 'pending', run_at = now(), wake_at = NULL, wait_kind = NULL, wait_name = NULL,
            children_open = coalesce(children_open, 0) - counted::int
          WHERE id = p.id;
          PERFORM pg_notify('${channel}', '');
        ELSIF done AND p.status IN ('running', 'pending') THEN
          -- the step still runs: its suspension resumes at once
          UPDATE ${s}.runs SET inbox = array_append(array_remove(inbox, 'children:'), 'children:'),
            children_open = coalesce(children_open, 0) - counted::int
          WHERE id = p.id;
        ELSIF counted THEN
          UPDATE ${s}.runs SET children_open = coalesce(children_open, 0) - 1 WHERE id = p.id;
        END IF;
        RETURN NULL;
      END
      $fn$`);
    await q.query(`
      CREATE OR REPLACE FUNCTION ${s}.durable_child_reopened() RETURNS trigger LANGUAGE plpgsql AS $fn$
      BEGIN
        UPDATE ${s}.runs SET children_open = coalesce(children_open, 0) + 1
        WHERE id = NEW.parent_id AND children_wait = NEW.parent_wait AND status IN ('pending', 'running', 'waiting');
        RETURN NULL;
      END
      $fn$`);
    await q.query(`DROP TRIGGER IF EXISTS runs_child_reopened ON ${s}.runs`);
    await q.query(`
      CREATE TRIGGER runs_child_reopened AFTER UPDATE OF status ON ${s}.runs
      FOR EACH ROW WHEN (NEW.parent_wait IS NOT NULL AND OLD.status IN ${ENDED} AND NEW.status IN ${GOING})
      EXECUTE FUNCTION ${s}.durable_child_reopened()`);
    await q.query(`DROP TRIGGER IF EXISTS runs_child_deleted ON ${s}.runs`);
    await q.query(`
      CREATE TRIGGER runs_child_deleted AFTER DELETE ON ${s}.runs
      FOR EACH ROW WHEN (OLD.parent_id IS NOT NULL AND OLD.status IN ${GOING})
      EXECUTE FUNCTION ${s}.durable_child_finished()`);
    // before the row is written, so the statement that moves the run (whichever it is) writes the new count
    await q.query(`
      CREATE OR REPLACE FUNCTION ${s}.durable_children_recount() RETURNS trigger LANGUAGE plpgsql AS $fn$
      BEGIN
        NEW.children_wait := coalesce(OLD.children_wait, 0) + 1;
        NEW.children_open := 0;
        RETURN NEW;
      END
      $fn$`);
    await q.query(`DROP TRIGGER IF EXISTS runs_children_recount ON ${s}.runs`);
    await q.query(`
      CREATE TRIGGER runs_children_recount BEFORE UPDATE OF status ON ${s}.runs
      FOR EACH ROW WHEN (NEW.has_children AND OLD.status IN ${ENDED} AND NEW.status IN ('pending', 'running', 'waiting'))
      EXECUTE FUNCTION ${s}.durable_children_recount()`);
    await cancelChildrenWhen(q, s, `('cancelled', 'failed', 'compensating', 'compensated', 'compensation_failed')`);
  }

  async down(q: QueryRunner): Promise<void> {
    const { s } = this;
    await cancelChildrenWhen(q, s, `('cancelled', 'failed', 'compensating')`);
    await q.query(`DROP TRIGGER IF EXISTS runs_children_recount ON ${s}.runs`);
    await q.query(`DROP FUNCTION IF EXISTS ${s}.durable_children_recount()`);
    await q.query(`DROP TRIGGER IF EXISTS runs_child_deleted ON ${s}.runs`);
    await q.query(`DROP TRIGGER IF EXISTS runs_child_reopened ON ${s}.runs`);
    await q.query(`DROP FUNCTION IF EXISTS ${s}.durable_child_reopened()`);
    // the count-free wake: the parent wakes when none of its children is going
    await q.query(childFinishedByScan(s, this.channel));
    await q.query(`
      ALTER TABLE ${s}.runs DROP COLUMN IF EXISTS children_open, DROP COLUMN IF EXISTS children_wait,
        DROP COLUMN IF EXISTS children_step, DROP COLUMN IF EXISTS parent_wait`);
  }
}
