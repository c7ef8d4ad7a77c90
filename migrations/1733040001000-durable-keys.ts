import type { QueryRunner } from 'typeorm';
import { DurableMigration } from './durable-migration';

/**
 * The statement that (re)defines the key trigger's function in schema `s` (quoted), notifying
 * `channel`; `via` is the outcome its `key_handed_off` records carry (the spelling changed in
 * DurableOutcomeSpelling).
 */
export function keyHandoffFunction(s: string, channel: string, via: 'run_again' | 'runAgain'): string {
  return `
  CREATE OR REPLACE FUNCTION ${s}.durable_key_handoff() RETURNS trigger LANGUAGE plpgsql AS $fn$
  DECLARE
    w record;
  BEGIN
    SELECT id, takes_key_after INTO w FROM ${s}.runs
    WHERE workflow = NEW.workflow AND key = NEW.key AND status = 'waiting' AND NOT holds_key
      AND takes_key_after IS NOT NULL
    FOR UPDATE;
    IF NOT FOUND THEN
      RETURN NULL;
    END IF;
    IF NEW.status = ANY (w.takes_key_after) THEN
      UPDATE ${s}.runs SET holds_key = false WHERE id = NEW.id;
      UPDATE ${s}.runs SET holds_key = true, status = 'pending', run_at = now(), deadline_at = NULL
      WHERE id = w.id;
      INSERT INTO ${s}.activity (kind, run_id, workflow, key, details)
      VALUES ('key_handed_off', w.id, NEW.workflow, NEW.key, jsonb_build_object(
        'workflow', NEW.workflow, 'key', NEW.key, 'from', NEW.id, 'fromStatus', NEW.status, 'via', '${via}'));
      PERFORM pg_notify('${channel}', '');
    ELSE
      UPDATE ${s}.runs SET status = 'cancelled', finished_at = now(),
        cancel_reason = 'the holder ' || NEW.id || ' ended ' || NEW.status || ' and the reuse policy keeps its key',
        error = jsonb_build_object('name', 'KeyTakenError', 'code', 'key_taken', 'holderId', NEW.id,
          'message', 'the holder ' || NEW.id || ' ended ' || NEW.status || ' and the reuse policy keeps its key')
      WHERE id = w.id;
    END IF;
    RETURN NULL;
  END
  $fn$`;
}

/**
 * What `onDuplicate: 'runAgain'` and `debounce` need: at most one run waiting behind each key's
 * holder (a partial unique index), the final statuses of the holder after which that run may take
 * the key (decided by the key policy when the start ran), the debounce cap, and a trigger that hands
 * the key to the waiting run in the same transaction as the holder's end, however it ends.
 */
export class DurableKeys1733040001000 extends DurableMigration {
  name = 'DurableKeys1733040001000';

  async up(q: QueryRunner): Promise<void> {
    const { s, channel } = this;
    await q.query(`ALTER TABLE ${s}.runs ADD COLUMN IF NOT EXISTS takes_key_after text[]`);
    await q.query(`ALTER TABLE ${s}.runs ADD COLUMN IF NOT EXISTS debounce_until timestamptz`);
    await q.query(`
      CREATE UNIQUE INDEX IF NOT EXISTS runs_key_waiter ON ${s}.runs (workflow, key)
      WHERE status = 'waiting' AND NOT holds_key AND takes_key_after IS NOT NULL`);
    await q.query(keyHandoffFunction(s, channel, 'run_again'));
    await q.query(`DROP TRIGGER IF EXISTS runs_key_handoff ON ${s}.runs`);
    await q.query(`
      CREATE TRIGGER runs_key_handoff AFTER UPDATE OF status ON ${s}.runs
      FOR EACH ROW WHEN (NEW.holds_key AND OLD.status IS DISTINCT FROM NEW.status
        AND NEW.status IN ('completed', 'failed', 'cancelled', 'compensated', 'compensation_failed'))
      EXECUTE FUNCTION ${s}.durable_key_handoff()`);
  }

  async down(q: QueryRunner): Promise<void> {
    const { s } = this;
    await q.query(`DROP TRIGGER IF EXISTS runs_key_handoff ON ${s}.runs`);
    await q.query(`DROP FUNCTION IF EXISTS ${s}.durable_key_handoff()`);
    await q.query(`DROP INDEX IF EXISTS ${s}.runs_key_waiter`);
    await q.query(`ALTER TABLE ${s}.runs DROP COLUMN IF EXISTS debounce_until, DROP COLUMN IF EXISTS takes_key_after`);
  }
}
