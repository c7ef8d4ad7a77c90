import type { Queryable } from './db';
import { runDeadline } from './sql';

/** Runs of one workflow in one status. */
export interface StatusCount {
  workflow: string;
  status: string;
  count: number;
}

/**
 * Reads of the operator's overview (`nestjs-durable status`, `workflows list`), which finds the
 * workflows in the database (the CLI has no definitions): the going runs per workflow and status,
 * each status through its partial index, and the runs finished lately through `runs_finished_live`
 * (key tombstones, pruned, are not counted). Neither reads the history beyond the window asked for.
 * Also whether a run is past its workflow deadline, which `runs send-event` tells of a dropped event.
 */
export class OverviewStore {
  private readonly sql: Record<string, string>;

  constructor(schema: string) {
    const S = `"${schema}"`;
    const going = (status: string) =>
      `SELECT workflow, '${status}' AS status, count(*)::int AS count FROM ${S}.runs WHERE status = '${status}' GROUP BY workflow`;
    this.sql = {
      going: `${['pending', 'running', 'waiting', 'compensating'].map(going).join(' UNION ALL ')} ORDER BY workflow, status`,
      finished: `
        SELECT workflow, status, count(*)::int AS count FROM ${S}.runs
        WHERE finished_at > now() - $1 * interval '1 millisecond' AND pruned_at IS NULL GROUP BY workflow, status ORDER BY workflow, status`,
      // the deadline as the engine reads it when an event is sent (EventsStore's lockRun), without the lock
      pastDeadline: `SELECT coalesce(${runDeadline('r')} <= statement_timestamp(), false) AS past FROM ${S}.runs r WHERE id = $1`,
    };
  }

  /** Runs pending, running, waiting or compensating, per workflow and status. */
  going(q: Queryable): Promise<StatusCount[]> {
    return q.query<StatusCount>(this.sql.going);
  }

  /** Runs finished in the last `withinMs`, per workflow and final status. */
  finished(q: Queryable, withinMs: number): Promise<StatusCount[]> {
    return q.query<StatusCount>(this.sql.finished, [withinMs]);
  }

  /** Whether run `runId`'s workflow deadline has passed (false when it has none); undefined when there is no such run. */
  async pastDeadline(q: Queryable, runId: string): Promise<boolean | undefined> {
    const [row] = await q.query<{ past: boolean }>(this.sql.pastDeadline, [runId]);
    return row?.past;
  }
}
