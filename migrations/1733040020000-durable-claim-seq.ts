import type { QueryRunner } from 'typeorm';
import { DurableMigration } from './durable-migration';

/**
 * `runs.claim_seq`: the number the claiming node gave the claim that took the run (see the worker's
 * `ClaimSequence`). A heartbeat gives back the runs its node holds without running them only when
 * their claim's answer came back, so it never needs to hold the node's claims while it reconciles.
 * A nullable column without a default: added without rewriting the table.
 */
export class DurableClaimSeq1733040020000 extends DurableMigration {
  name = 'DurableClaimSeq1733040020000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE ${this.s}.runs ADD COLUMN IF NOT EXISTS claim_seq bigint`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE ${this.s}.runs DROP COLUMN IF EXISTS claim_seq`);
  }
}
