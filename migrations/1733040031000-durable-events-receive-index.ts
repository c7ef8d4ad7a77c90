import type { QueryRunner } from 'typeorm';
import { DurableMigration } from './durable-migration';

/** The index of this migration, built by `up` (and by `migrate --concurrently` first). */
const INDEXES: [name: string, definition: string][] = [['events_receive', '(run_id, kind, name, created_at, id)']];

/** The index it replaces: a run's events of one name in id order. */
const REPLACED: [name: string, definition: string][] = [['events_by_run', '(run_id, kind, name, id)']];

/**
 * A waiting step reads its event, the newest kept before its wait's end, through `events_receive`
 * (by the send's moment): the events of that name kept after the wait's end (for a later wait, never
 * its answer) are no longer read one by one each time. It replaces `events_by_run`, which served the
 * same reads in id order. On a big table run `npx nestjs-durable migrate --concurrently` first
 * (docs/operations.md, "Upgrading").
 */
export class DurableEventsReceiveIndex1733040031000 extends DurableMigration {
  name = 'DurableEventsReceiveIndex1733040031000';

  async up(q: QueryRunner): Promise<void> {
    await this.createEventsIndexes(q, INDEXES);
    await this.dropIndexes(q, REPLACED);
  }

  async down(q: QueryRunner): Promise<void> {
    await this.createEventsIndexes(q, REPLACED);
    await this.dropIndexes(q, INDEXES);
  }

  /** Creates indexes on `events`, re-runnably (`migrate --concurrently` builds them first). */
  private async createEventsIndexes(q: QueryRunner, indexes: [name: string, definition: string][]): Promise<void> {
    for (const [name, definition] of indexes) await q.query(`CREATE INDEX IF NOT EXISTS ${name} ON ${this.s}.events ${definition}`);
  }
}
