import type { QueryRunner } from 'typeorm';
import { keyHandoffFunction } from './1733040001000-durable-keys';
import { DurableMigration } from './durable-migration';

/** The outcomes whose stored spelling changes: snake_case before, the API's camelCase after. */
const SPELLINGS: [snake: string, camel: string][] = [
  ['use_existing', 'useExisting'],
  ['cancel_existing', 'cancelExisting'],
  ['run_again', 'runAgain'],
  ['send_event', 'sendEvent'],
];

/**
 * One spelling of a duplicate's outcome everywhere: rewrites the stored activity records
 * (`key_duplicate` `details.outcome`, `key_handed_off` `details.via`) from snake_case to the
 * camelCase of `StartResult.outcome`, and redefines the key trigger to write `via: 'runAgain'`.
 * The rewrite is one statement over the records that carry an old spelling (a scan of `activity`,
 * rows locked until the migration's transaction commits); `down` spells them back.
 */
export class DurableOutcomeSpelling1733040010000 extends DurableMigration {
  name = 'DurableOutcomeSpelling1733040010000';

  async up(q: QueryRunner): Promise<void> {
    await this.respell(q, 'camel');
    await q.query(keyHandoffFunction(this.s, this.channel, 'runAgain'));
  }

  async down(q: QueryRunner): Promise<void> {
    await this.respell(q, 'snake');
    await q.query(keyHandoffFunction(this.s, this.channel, 'run_again'));
  }

  /** Rewrites every outcome spelt the other way into spelling `to`, in one statement. */
  private async respell(q: QueryRunner, to: 'camel' | 'snake'): Promise<void> {
    const pairs = SPELLINGS.map(([snake, camel]) => (to === 'camel' ? { from: snake, to: camel } : { from: camel, to: snake }));
    await q.query(
      `UPDATE ${this.s}.activity a
       SET details = jsonb_set(a.details, ARRAY[f.field], to_jsonb(m.to))
       FROM jsonb_to_recordset($1::jsonb) AS m("from" text, "to" text),
         (VALUES ('key_duplicate', 'outcome'), ('key_handed_off', 'via')) AS f(kind, field)
       WHERE a.kind = f.kind AND a.details->>f.field = m."from"`,
      [JSON.stringify(pairs)],
    );
  }
}
