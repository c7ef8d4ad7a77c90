import type { QueryRunner } from 'typeorm';
import { DurableMigration } from './durable-migration';

/**
 * `nodes.process` and `leases.process`: the process that last beat under a node id, and the one
 * that holds the maintenance lease. A heartbeat that finds another process's mark on its node's row
 * knows that another process uses (or used) the same node id: it gives back no run it holds
 * without running it and does not renew a lease taken by that process. Nullable columns without a
 * default: added without rewriting the tables.
 */
export class DurableNodeProcess1733040022000 extends DurableMigration {
  name = 'DurableNodeProcess1733040022000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE ${this.s}.nodes ADD COLUMN IF NOT EXISTS process uuid`);
    await q.query(`ALTER TABLE ${this.s}.leases ADD COLUMN IF NOT EXISTS process uuid`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE ${this.s}.leases DROP COLUMN IF EXISTS process`);
    await q.query(`ALTER TABLE ${this.s}.nodes DROP COLUMN IF EXISTS process`);
  }
}
