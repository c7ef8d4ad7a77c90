import type { Queryable } from './db';

/** Statements on `memos`: the recorded results of `ctx.transaction` calls. */
export class MemosStore {
  private readonly sql: Record<string, string>;

  constructor(schema: string) {
    const S = `"${schema}"`;
    this.sql = {
      get: `SELECT result FROM ${S}.memos WHERE run_id = $1 AND step = $2 AND call = $3`,
      record: `
        INSERT INTO ${S}.memos (run_id, step, call, result)
        SELECT $1, $2, $3, $4::jsonb FROM ${S}.runs WHERE id = $1 AND epoch = $5 AND status IN ('running', 'compensating') AND node_id IS NOT NULL FOR SHARE
        ON CONFLICT DO NOTHING RETURNING 1`,
    };
  }

  /** The recorded result `{ v }` of call `call` of step `step`, or undefined. */
  async get(q: Queryable, runId: string, step: number, call: number): Promise<{ v: unknown } | undefined> {
    const [row] = await q.query<{ result: { v: unknown } }>(this.sql.get, [runId, step, call]);
    return row?.result;
  }

  /**
   * Records a result inside the caller's transaction, only while execution `epoch` still owns the
   * run (share-locking it until commit); false when it does not or the call was already recorded.
   */
  async record(q: Queryable, runId: string, step: number, call: number, result: unknown, epoch: number): Promise<boolean> {
    const rows = await q.query(this.sql.record, [runId, step, call, JSON.stringify({ v: result ?? null }), epoch]);
    return rows.length > 0;
  }
}
