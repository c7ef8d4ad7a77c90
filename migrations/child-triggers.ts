import type { QueryRunner } from 'typeorm';

/**
 * `durable_child_finished` in its count-free form, as DurableWaits1733040002000 makes it: a child's
 * end wakes its parent when it waits for its children and none is still going; a parent still
 * mid-step gets a mark in its inbox instead (its suspension then resumes at once). Schema `s`
 * (quoted), notification `channel`.
 */
export function childFinishedByScan(s: string, channel: string): string {
  return `
      CREATE OR REPLACE FUNCTION ${s}.durable_child_finished() RETURNS trigger LANGUAGE plpgsql AS $fn$
      DECLARE
        p record;
      BEGIN
        SELECT id, status, wait_kind INTO p FROM ${s}.runs WHERE id = NEW.parent_id FOR UPDATE;
        IF NOT FOUND THEN
          RETURN NULL;
        END IF;
        IF p.status = 'waiting' AND p.wait_kind = 'children' THEN
          IF NOT EXISTS (SELECT 1 FROM ${s}.runs c WHERE c.parent_id = NEW.parent_id
                         AND c.status IN ('pending', 'running', 'waiting', 'compensating')) THEN
            UPDATE ${s}.runs SET status = 'pending', run_at = now(), wake_at = NULL, wait_kind = NULL, wait_name = NULL
            WHERE id = NEW.parent_id;
            PERFORM pg_notify('${channel}', '');
          END IF;
        ELSIF p.status IN ('running', 'pending') THEN
          UPDATE ${s}.runs SET inbox = array_append(array_remove(inbox, 'children:'), 'children:') WHERE id = NEW.parent_id;
        END IF;
        RETURN NULL;
      END
      $fn$`;
}

/** (Re)creates `runs_cancel_children` in schema `s` (quoted), fired by a parent's move to one of `statuses` (an SQL list). */
export async function cancelChildrenWhen(q: QueryRunner, s: string, statuses: string): Promise<void> {
  await q.query(`DROP TRIGGER IF EXISTS runs_cancel_children ON ${s}.runs`);
  await q.query(`
      CREATE TRIGGER runs_cancel_children AFTER UPDATE OF status ON ${s}.runs
      FOR EACH ROW WHEN (NEW.has_children AND OLD.status IS DISTINCT FROM NEW.status AND NEW.status IN ${statuses})
      EXECUTE FUNCTION ${s}.durable_cancel_children()`);
}
