import type { Queryable } from './db';
import { lastAttemptFields } from './sql';
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
 * Reads of a run's step attempts: the rows of `step_attempts`, then the attempt that ended the run,
 * kept on its row (`runs.last_status` and the columns beside it). Both are written by the runs' transition statement
 * (`RunsStore.transition`) and deleted by the runs' prune statement.
 */
export class HistoryStore {
  private readonly sql: Record<string, string>;

  constructor(schema: string) {
    const S = `"${schema}"`;
    this.sql = {
      list: `
        SELECT step, attempt, status, started_at, finished_at, error, node_id FROM (
          (SELECT 0 AS part, id, step, attempt, status, started_at, finished_at, error, node_id FROM ${S}.step_attempts
           WHERE run_id = $1 ORDER BY id LIMIT $2)
          UNION ALL
          SELECT 1, 0, ${lastAttemptFields('r')} FROM ${S}.runs r WHERE r.id = $1 AND r.last_status IS NOT NULL
        ) h ORDER BY part, id LIMIT $2`,
    };
  }

  /** The first `limit` attempts of run `runId`, in the order they ended. */
  list(q: Queryable, runId: string, limit: number): Promise<StepAttemptRow[]> {
    return q.query<StepAttemptRow>(this.sql.list, [runId, limit]);
  }
}
