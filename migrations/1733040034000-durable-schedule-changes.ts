import type { QueryRunner } from 'typeorm';
import { DurableMigration } from './durable-migration';

/**
 * What changed among the schedules, so a node's re-read of them (with its heartbeat) reads only
 * that, however many are stored (schedules made at runtime, one per tenant):
 *
 * - `schedules.changed_xid`: the transaction (`txid_current()`) that stored the row, or last changed
 *   what a node ticks it on (name, workflow, cron, time zone); a fire's updates leave it as it is.
 *   Read through `schedules_changed`: the rows changed by a transaction a node's last read did not
 *   see have an id at least that read's snapshot's `xmax`, or one of its in-progress ids (`xip`).
 * - `schedule_removals`: one row per removed schedule (and one with no name for a `TRUNCATE`), with
 *   the removing transaction's id, kept an hour (the nodes prune it).
 *
 * Both are written by triggers, whichever statement changes the table. Rows stored before this
 * migration have `changed_xid` 0: a node reads every schedule at its startup anyway.
 */
export class DurableScheduleChanges1733040034000 extends DurableMigration {
  name = 'DurableScheduleChanges1733040034000';

  async up(q: QueryRunner): Promise<void> {
    const { s } = this;
    // a constant default rewrites nothing; rows stored from now on take their transaction's id
    await q.query(`ALTER TABLE ${s}.schedules ADD COLUMN IF NOT EXISTS changed_xid bigint NOT NULL DEFAULT 0`);
    await q.query(`ALTER TABLE ${s}.schedules ALTER COLUMN changed_xid SET DEFAULT txid_current()`);
    await q.query(`CREATE INDEX IF NOT EXISTS schedules_changed ON ${s}.schedules (changed_xid)`);
    await q.query(`
      CREATE TABLE IF NOT EXISTS ${s}.schedule_removals (
        name        text,
        removed_xid bigint NOT NULL DEFAULT txid_current(),
        removed_at  timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX IF NOT EXISTS schedule_removals_xid ON ${s}.schedule_removals (removed_xid)`);
    await q.query(`CREATE INDEX IF NOT EXISTS schedule_removals_at ON ${s}.schedule_removals (removed_at)`);
    await q.query(`
      CREATE OR REPLACE FUNCTION ${s}.durable_schedule_changed() RETURNS trigger
      LANGUAGE plpgsql AS $fn$
      BEGIN
        IF OLD.name IS DISTINCT FROM NEW.name THEN
          INSERT INTO ${s}.schedule_removals (name) VALUES (OLD.name);
        END IF;
        NEW.changed_xid := txid_current();
        RETURN NEW;
      END
      $fn$`);
    await q.query(`
      CREATE OR REPLACE FUNCTION ${s}.durable_schedules_removed() RETURNS trigger
      LANGUAGE plpgsql AS $fn$
      BEGIN
        IF TG_OP = 'TRUNCATE' THEN
          INSERT INTO ${s}.schedule_removals (name) VALUES (NULL);
        ELSE
          INSERT INTO ${s}.schedule_removals (name) SELECT name FROM old_rows;
        END IF;
        RETURN NULL;
      END
      $fn$`);
    await q.query(`DROP TRIGGER IF EXISTS schedules_changed_trg ON ${s}.schedules`);
    await q.query(`
      CREATE TRIGGER schedules_changed_trg BEFORE UPDATE ON ${s}.schedules FOR EACH ROW
      WHEN ((OLD.name, OLD.workflow, OLD.cron, OLD.timezone) IS DISTINCT FROM (NEW.name, NEW.workflow, NEW.cron, NEW.timezone))
      EXECUTE FUNCTION ${s}.durable_schedule_changed()`);
    await q.query(`DROP TRIGGER IF EXISTS schedules_removed_trg ON ${s}.schedules`);
    await q.query(`
      CREATE TRIGGER schedules_removed_trg AFTER DELETE ON ${s}.schedules REFERENCING OLD TABLE AS old_rows
      FOR EACH STATEMENT EXECUTE FUNCTION ${s}.durable_schedules_removed()`);
    await q.query(`DROP TRIGGER IF EXISTS schedules_truncated_trg ON ${s}.schedules`);
    await q.query(`
      CREATE TRIGGER schedules_truncated_trg AFTER TRUNCATE ON ${s}.schedules
      FOR EACH STATEMENT EXECUTE FUNCTION ${s}.durable_schedules_removed()`);
  }

  async down(q: QueryRunner): Promise<void> {
    const { s } = this;
    await q.query(`DROP TRIGGER IF EXISTS schedules_truncated_trg ON ${s}.schedules`);
    await q.query(`DROP TRIGGER IF EXISTS schedules_removed_trg ON ${s}.schedules`);
    await q.query(`DROP TRIGGER IF EXISTS schedules_changed_trg ON ${s}.schedules`);
    await q.query(`DROP FUNCTION IF EXISTS ${s}.durable_schedules_removed()`);
    await q.query(`DROP FUNCTION IF EXISTS ${s}.durable_schedule_changed()`);
    await q.query(`DROP TABLE IF EXISTS ${s}.schedule_removals`);
    await q.query(`DROP INDEX IF EXISTS ${s}.schedules_changed`);
    await q.query(`ALTER TABLE ${s}.schedules DROP COLUMN IF EXISTS changed_xid`);
  }
}
