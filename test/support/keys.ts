import { expect } from '@jest/globals';
import { KeyTakenError, type RunStatus } from '../../src';
import { FINISHED_STATUSES } from '../../src/domain/run-info';
import { ident, sql } from './db';

/** Puts a run into `status` directly (finished statuses get `finished_at`, picked-up ones `started_at`). */
export async function forceStatus(schema: string, id: string, status: RunStatus): Promise<void> {
  await sql(
    `UPDATE ${ident(schema)}.runs SET status = $2, finished_at = CASE WHEN $3 THEN now() END,
       started_at = CASE WHEN $2 <> 'pending' THEN coalesce(started_at, now()) END
     WHERE id = $1`,
    [id, status, FINISHED_STATUSES.includes(status)],
  );
}

/** The ids of the runs holding (workflow, key). */
export async function holdersOf(schema: string, workflow: string, key: string): Promise<string[]> {
  const rows = await sql(`SELECT id FROM ${ident(schema)}.runs WHERE workflow = $1 AND key = $2 AND holds_key`, [workflow, key]);
  return rows.map((r) => r.id);
}

/** The error `p` rejects with; fails when it resolves. */
export async function rejection(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('expected a rejection, but it resolved');
}

/** `p` rejects with `KeyTakenError(holderId)`. */
export async function expectKeyTaken(p: Promise<unknown>, holderId: string): Promise<void> {
  const err = await rejection(p);
  expect(err).toBeInstanceOf(KeyTakenError);
  expect((err as KeyTakenError).holderId).toBe(holderId);
}
