import type { QueryRunner } from 'typeorm';
import { DurableMigration } from './durable-migration';

/**
 * `schedule_fires` rows outlive their schedule (until pruned with the activity retention): the
 * foreign key that deleted them with it goes, so a schedule removed and added again under its
 * name finds the ticks it fired before and does not fire them again. `down` deletes the records
 * of schedules that are gone and puts the foreign key back.
 */
export class DurableScheduleFiresKept1733040024000 extends DurableMigration {
  name = 'DurableScheduleFiresKept1733040024000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE ${this.s}.schedule_fires DROP CONSTRAINT IF EXISTS schedule_fires_schedule_fkey`);
  }

  async down(q: QueryRunner): Promise<void> {
    const { s } = this;
    await q.query(`DELETE FROM ${s}.schedule_fires f WHERE NOT EXISTS (SELECT 1 FROM ${s}.schedules WHERE name = f.schedule)`);
    await q.query(`ALTER TABLE ${s}.schedule_fires DROP CONSTRAINT IF EXISTS schedule_fires_schedule_fkey`);
    await q.query(
      `ALTER TABLE ${s}.schedule_fires ADD CONSTRAINT schedule_fires_schedule_fkey FOREIGN KEY (schedule) REFERENCES ${s}.schedules (name) ON DELETE CASCADE`,
    );
  }
}
