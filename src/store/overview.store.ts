import type { Queryable } from './db';

/** Runs of one workflow in one status. */
export interface StatusCount {
  workflow: string;
  status: string;
  count: number;
}

/** A node as its last heartbeat left it. */
export interface NodeRow {
  id: string;
  started_at: Date;
  heartbeat_at: Date;
  /** Milliseconds since its last heartbeat, by the database clock. */
  silent_ms: number;
  info: Record<string, unknown>;
}

/**
 * Reads of the operator's overview (`nestjs-durable status`, `workflows list`): the going runs per
 * workflow and status, each status through its partial index; the runs finished lately through
 * `runs_finished`; the nodes. None reads the history beyond the window asked for.
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
        WHERE finished_at > now() - $1 * interval '1 millisecond' GROUP BY workflow, status ORDER BY workflow, status`,
      nodes: `
        SELECT id, started_at, heartbeat_at, (extract(epoch FROM now() - heartbeat_at) * 1000)::float8 AS silent_ms, info
        FROM ${S}.nodes ORDER BY id`,
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

  /** Every node row (a dead node's row stays until the maintenance pass removes it). */
  nodes(q: Queryable): Promise<NodeRow[]> {
    return q.query<NodeRow>(this.sql.nodes);
  }
}
