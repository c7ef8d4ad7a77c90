import type { QueryRunner } from 'typeorm';
import { DurableMigration } from './durable-migration';

/**
 * Cron schedules: one row per schedule (from `@Schedule` or `DurableService.schedule`), and one row
 * per fired tick. The primary key `(schedule, tick_at)` of `schedule_fires` is the once-per-tick
 * guard: every node ticks, only the one whose insert wins starts the run, in the same transaction.
 */
export class DurableSchedules1733040004000 extends DurableMigration {
  name = 'DurableSchedules1733040004000';

  async up(q: QueryRunner): Promise<void> {
    const { s } = this;
    await q.query(`
      CREATE TABLE IF NOT EXISTS ${s}.schedules (
        name         text PRIMARY KEY,
        workflow     text NOT NULL,
        cron         text NOT NULL,
        timezone     text NOT NULL DEFAULT 'UTC',
        key          text,
        input        jsonb,
        source       text NOT NULL DEFAULT 'api',
        next_fire_at timestamptz,
        last_tick_at timestamptz,
        last_fire_at timestamptz,
        last_run_id  uuid,
        last_outcome text,
        last_error   jsonb,
        fires        integer NOT NULL DEFAULT 0,
        failures     integer NOT NULL DEFAULT 0,
        created_at   timestamptz NOT NULL DEFAULT now(),
        updated_at   timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT schedules_source CHECK (source IN ('decorator', 'api')),
        CONSTRAINT schedules_key_bytes CHECK (key IS NULL OR octet_length(key) BETWEEN 1 AND 255)
      )`);
    await q.query(`
      CREATE TABLE IF NOT EXISTS ${s}.schedule_fires (
        schedule text NOT NULL REFERENCES ${s}.schedules (name) ON DELETE CASCADE,
        tick_at  timestamptz NOT NULL,
        node_id  text NOT NULL,
        run_id   uuid,
        outcome  text,
        fired_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (schedule, tick_at)
      )`);
    await q.query(`CREATE INDEX IF NOT EXISTS schedule_fires_at ON ${s}.schedule_fires (fired_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    const { s } = this;
    await q.query(`DROP TABLE IF EXISTS ${s}.schedule_fires`);
    await q.query(`DROP TABLE IF EXISTS ${s}.schedules`);
  }
}
