import type { Queryable } from './db';

/** Kinds of activity event the module records. */
export type ActivityKind = 'key_duplicate' | 'key_handed_off' | 'key_released' | 'key_retaken';

/** Statements on the `activity` log. */
export class ActivityStore {
  private readonly sql: Record<string, string>;

  constructor(schema: string) {
    const S = `"${schema}"`;
    this.sql = {
      record: `INSERT INTO ${S}.activity (kind, run_id, workflow, key, details) VALUES ($1, $2, $3, $4, $5)`,
      prune: `
        WITH d AS (
          DELETE FROM ${S}.activity WHERE id IN (
            SELECT id FROM ${S}.activity WHERE at < now() - $1 * interval '1 millisecond' LIMIT $2)
          RETURNING 1
        ) SELECT count(*)::int AS n FROM d`,
    };
  }

  /** Appends one event (in the caller's transaction when `q` is one). */
  async record(q: Queryable, kind: ActivityKind, runId: string, workflow: string, key: string | null, details: object): Promise<void> {
    await q.query(this.sql.record, [kind, runId, workflow, key, JSON.stringify({ workflow, key, ...details })]);
  }

  /** Deletes up to `batch` events older than `olderThanMs`; returns how many. */
  async prune(q: Queryable, olderThanMs: number, batch: number): Promise<number> {
    const [row] = await q.query<{ n: number }>(this.sql.prune, [olderThanMs, batch]);
    return row.n;
  }
}
