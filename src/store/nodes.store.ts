import type { Queryable } from './db';

/** Statements on the `nodes` table (one heartbeat row per live node). */
export class NodesStore {
  private readonly sql: Record<string, string>;

  constructor(schema: string) {
    const S = `"${schema}"`;
    this.sql = {
      beat: `
        WITH hb AS (
          INSERT INTO ${S}.nodes (id, info) VALUES ($1, $2)
          ON CONFLICT (id) DO UPDATE SET heartbeat_at = now()
        )
        SELECT x.id FROM unnest($3::uuid[], $4::int[]) AS x(id, epoch)
        LEFT JOIN ${S}.runs r ON r.id = x.id AND r.epoch = x.epoch AND r.status IN ('running', 'compensating')
        WHERE r.id IS NULL`,
      recover: `
        WITH dead AS (
          DELETE FROM ${S}.nodes WHERE heartbeat_at < now() - $1 * interval '1 millisecond' RETURNING id
        ), orphans AS (
          UPDATE ${S}.runs r SET status = CASE WHEN r.status = 'compensating' THEN 'compensating' ELSE 'pending' END,
            node_id = NULL, run_at = now()
          WHERE (r.status = 'running' OR (r.status = 'compensating' AND r.node_id IS NOT NULL))
            AND (r.node_id IN (SELECT id FROM dead)
                 OR NOT EXISTS (SELECT 1 FROM ${S}.nodes n WHERE n.id = r.node_id))
          RETURNING r.id
        )
        SELECT (SELECT count(*) FROM dead)::int AS nodes, (SELECT count(*) FROM orphans)::int AS runs`,
      remove: `DELETE FROM ${S}.nodes WHERE id = $1`,
    };
  }

  /**
   * Records this node's heartbeat (re-creating its row if it had been declared dead) and returns
   * the runs among `running` (id + epoch) that it no longer owns: cancelled, finished or recovered.
   */
  async beat(q: Queryable, nodeId: string, info: object, running: { id: string; epoch: number }[]): Promise<string[]> {
    const rows = await q.query<{ id: string }>(this.sql.beat, [nodeId, JSON.stringify(info), running.map((r) => r.id), running.map((r) => r.epoch)]);
    return rows.map((r) => r.id);
  }

  /** Deletes nodes silent for `timeoutMs` and puts their (and any orphaned) running runs back to pending. */
  async recoverDead(q: Queryable, timeoutMs: number): Promise<{ nodes: number; runs: number }> {
    const [row] = await q.query<{ nodes: number; runs: number }>(this.sql.recover, [timeoutMs]);
    return row;
  }

  /** Removes this node's row (clean shutdown). */
  async remove(q: Queryable, nodeId: string): Promise<void> {
    await q.query(this.sql.remove, [nodeId]);
  }
}
