import type { Queryable } from './db';
import type { StepAttemptStatus } from './runs.types';

/** A `step_attempts` row. */
export interface StepAttemptRow {
  step: number;
  attempt: number;
  status: StepAttemptStatus;
  started_at: Date;
  finished_at: Date;
  error: unknown;
  node_id: string | null;
}

/**
 * Reads of the `step_attempts` table. Its rows are written by the runs' transition statement
 * (`RunsStore.transition`) and deleted by the runs' prune statement.
 */
export class HistoryStore {
  private readonly sql: Record<string, string>;

  constructor(schema: string) {
    const S = `"${schema}"`;
    this.sql = {
      list: `
        SELECT step, attempt, status, started_at, finished_at, error, node_id FROM ${S}.step_attempts
        WHERE run_id = $1 ORDER BY id LIMIT $2`,
    };
  }

  /** The first `limit` attempts of run `runId`, in the order they ended. */
  list(q: Queryable, runId: string, limit: number): Promise<StepAttemptRow[]> {
    return q.query<StepAttemptRow>(this.sql.list, [runId, limit]);
  }
}
