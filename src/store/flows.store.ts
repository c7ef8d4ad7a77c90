import type { Queryable } from './db';
import { runColumns, type RunRow } from './run-row';
import { statusLiterals } from './sql';
import { FINISHED_STATUSES, type RunStatus } from '../domain/run-info';
import {
  depOutcome,
  type DepOutcome,
  type FlowNodeRow,
  type FlowPruneCursor,
  type FlowRow,
  type NewFlowEdge,
  type NewFlowNode,
  type RerunNodeRow,
} from './flows.types';

/** The finished statuses as an SQL list. */
const FINAL = `(${statusLiterals(FINISHED_STATUSES)})`;

/**
 * Every statement of DAG flows: the `flows` and `flow_deps` tables (hooks: `HooksStore`) and the flow
 * columns of `runs`. Dependency resolution itself is `durable_flow_resolve_cascaded` (migrations/
 * flow-resolution.ts), called by the triggers on `runs` and, for repairs, appends and reruns, from
 * here: it also reports the nodes it cancelled.
 */
export class FlowsStore {
  private readonly sql: Record<string, string>;

  constructor(
    schema: string,
    /** Channel the workers LISTEN on. */
    readonly channel: string,
  ) {
    const S = `"${schema}"`;
    this.sql = {
      createFlow: `
        INSERT INTO ${S}.flows (id, name, ignore_cancelled, ignore_failed, ignore_deleted)
        VALUES ($1, $2, $3, $4, $5) ON CONFLICT (id) DO NOTHING RETURNING id`,
      touchFlow: `UPDATE ${S}.flows SET updated_at = now() WHERE id = $1 RETURNING *`,
      getFlow: `SELECT * FROM ${S}.flows WHERE id = $1`,
      // the named nodes and, transitively, the nodes they depend on (UNION: each once, even on a cycle)
      upstream: `
        WITH RECURSIVE up AS (
          SELECT r.name, r.deps FROM ${S}.runs r WHERE r.flow_id = $1 AND r.name = ANY($2::text[])
          UNION
          SELECT r.name, r.deps FROM up JOIN ${S}.runs r ON r.flow_id = $1 AND r.name = ANY(up.deps)
        )
        SELECT name, coalesce(deps, '{}') AS deps FROM up`,
      // whether a node of the flow depends on one of the names (through an edge: every dep has one)
      dependedOn: `SELECT EXISTS (SELECT 1 FROM ${S}.flow_deps WHERE flow_id = $1 AND dep_name = ANY($2::text[])) AS yes`,
      lockNodes: `
        SELECT id, name, status FROM ${S}.runs WHERE flow_id = $1 AND name = ANY($2::text[])
        ORDER BY id FOR SHARE`,
      insertNodes: `
        WITH ins AS (
          INSERT INTO ${S}.runs (id, workflow, key, holds_key, input, timeout_ms, flow_id, flow_name, name, deps, deps_left, status, priority, group_key, trace)
          SELECT id, workflow, key, key IS NOT NULL, input, timeout_ms, flow_id, flow_name, name, deps, deps_left,
            CASE WHEN deps_left > 0 THEN 'waiting' ELSE 'pending' END, coalesce(priority, 0), group_key, trace
          FROM jsonb_to_recordset($1::jsonb) AS v(id uuid, workflow text, key text, input jsonb, timeout_ms integer,
            flow_id text, flow_name text, name text, deps text[], deps_left integer, priority integer, group_key text, trace jsonb)
          RETURNING status
        ), note AS MATERIALIZED (
          SELECT pg_notify($2, '') FROM ins WHERE status = 'pending' LIMIT 1
        )
        SELECT count(*)::int AS n FROM ins LEFT JOIN note ON true`,
      // nodes of the flow already keyed with one of the (workflow, key) pairs
      keyedNodes: `
        SELECT r.name, r.workflow, r.key FROM ${S}.runs r JOIN unnest($2::text[], $3::text[]) AS k(workflow, key)
          ON r.workflow = k.workflow AND r.key = k.key
        WHERE r.flow_id = $1`,
      // rerunFlow: the nodes to run again, locked, with what their fresh runs copy
      lockForRerun: `
        SELECT id, name, workflow, key, input, timeout_ms, priority, group_key, coalesce(deps, '{}') AS deps, status,
          pruned_at IS NOT NULL AS pruned
        FROM ${S}.runs WHERE flow_id = $1 AND name = ANY($2::text[]) ORDER BY id FOR UPDATE`,
      // the runs they were leave the flow (kept as runs of their own, with their history)
      detach: `UPDATE ${S}.runs SET flow_id = NULL WHERE id = ANY($1::uuid[])`,
      // their edges move to the fresh runs, open again; returns the deps naming no node that had been
      // resolved (they count as deleted again at once; the others wait for an append or the repair)
      moveEdges: `
        WITH old AS (
          SELECT d.dep_name, d.run_id, d.resolved, m.new_id FROM ${S}.flow_deps d
          JOIN unnest($2::uuid[], $3::uuid[]) AS m(old_id, new_id) ON d.run_id = m.old_id
          WHERE d.flow_id = $1 FOR UPDATE OF d
        ), moved AS (
          UPDATE ${S}.flow_deps d SET run_id = old.new_id, resolved = false,
            missing = NOT EXISTS (SELECT 1 FROM ${S}.runs p WHERE p.flow_id = $1 AND p.name = d.dep_name)
          FROM old WHERE d.flow_id = $1 AND d.dep_name = old.dep_name AND d.run_id = old.run_id
          RETURNING d.dep_name, d.missing, old.resolved
        )
        SELECT DISTINCT dep_name FROM moved WHERE missing AND resolved`,
      insertEdges: `
        INSERT INTO ${S}.flow_deps (flow_id, dep_name, run_id, ignore_cancelled, ignore_failed, ignore_deleted, missing)
        SELECT flow_id, dep_name, run_id, ignore_cancelled, ignore_failed, ignore_deleted, missing
        FROM jsonb_to_recordset($1::jsonb) AS v(flow_id text, dep_name text, run_id uuid, ignore_cancelled boolean,
          ignore_failed boolean, ignore_deleted boolean, missing boolean)`,
      clearMissing: `
        UPDATE ${S}.flow_deps SET missing = false
        WHERE flow_id = $1 AND dep_name = ANY($2::text[]) AND missing AND NOT resolved`,
      // woke: nodes made pending; cancelled: the workflow of each node it cancelled (a dependency
      // that did not complete), its dependants' dependants included
      resolve: `SELECT woke, cancelled_workflows AS cancelled FROM ${S}.durable_flow_resolve_cascaded($1, $2::text[], $3::text[])`,
      node: `SELECT ${runColumns(S, 'r')} FROM ${S}.runs r WHERE flow_id = $1 AND name = $2`,
      nodes: `
        SELECT ${runColumns(S, 'r')} FROM ${S}.runs r WHERE flow_id = $1 AND ($2::text[] IS NULL OR name = ANY($2::text[]))
        ORDER BY name`,
      page: `
        SELECT ${runColumns(S, 'r')} FROM ${S}.runs r WHERE flow_id = $1 AND ($2::text IS NULL OR name > $2)
          AND ($3::text[] IS NULL OR name = ANY($3::text[]))
        ORDER BY name LIMIT $4`,
      recorded: `
        SELECT name, result FROM ${S}.runs
        WHERE flow_id = $1 AND status = 'completed' AND name <> $2
          AND ($3::text[] IS NULL OR name = ANY($3::text[]))
        ORDER BY name`,
      graph: `SELECT id, name, workflow, deps, status FROM ${S}.runs WHERE flow_id = $1 ORDER BY id`,
      // repairs (the DynamicLifeline): edges left open although their dep is final
      missedEdges: `
        SELECT d.flow_id, array_agg(DISTINCT p.name) AS names
        FROM ${S}.flow_deps d
        JOIN ${S}.runs p ON p.flow_id = d.flow_id AND p.name = d.dep_name AND p.status IN ${FINAL}
        WHERE NOT d.resolved
        GROUP BY d.flow_id LIMIT $1`,
      finalNodes: `
        SELECT name, status FROM ${S}.runs WHERE flow_id = $1 AND name = ANY($2::text[]) AND status IN ${FINAL}`,
      // waiting nodes whose every edge is resolved but which were never made pending
      stalledNodes: `
        WITH s AS (
          SELECT r.id FROM ${S}.runs r
          WHERE r.status = 'waiting' AND r.deps_left > 0 AND r.flow_id IS NOT NULL
            AND NOT EXISTS (SELECT 1 FROM ${S}.flow_deps d WHERE d.run_id = r.id AND NOT d.resolved)
          LIMIT $1 FOR UPDATE SKIP LOCKED
        ), w AS (
          UPDATE ${S}.runs r SET status = 'pending', deps_left = 0, run_at = now()
          FROM s WHERE r.id = s.id AND r.status = 'waiting' RETURNING r.id
        ), note AS MATERIALIZED (SELECT pg_notify($2, '') FROM w LIMIT 1)
        SELECT count(*)::int AS n FROM w LEFT JOIN note ON true`,
      // deps that never appeared (or vanished unnoticed), in up to $1 flows that went quiet for
      // `grace`: each flow is tested once, and before the LIMIT, so busy flows never crowd out a quiet one
      missingDeps: `
        WITH m AS MATERIALIZED (
          SELECT d.flow_id, d.dep_name FROM ${S}.flow_deps d
          WHERE NOT d.resolved AND (d.missing OR $3::boolean) AND ($4::text IS NULL OR d.flow_id = $4)
            AND NOT EXISTS (SELECT 1 FROM ${S}.runs p WHERE p.flow_id = d.flow_id AND p.name = d.dep_name)
        ), quiet AS (
          SELECT f.flow_id FROM (SELECT DISTINCT flow_id FROM m) f
          WHERE NOT EXISTS (
              SELECT 1 FROM ${S}.runs r WHERE r.flow_id = f.flow_id
                AND (r.status IN ('pending', 'running', 'compensating')
                     OR (r.status = 'waiting' AND coalesce(r.deps_left, 0) = 0)
                     OR r.finished_at > now() - $2 * interval '1 millisecond'
                     OR r.created_at > now() - $2 * interval '1 millisecond'))
            AND NOT EXISTS (
              SELECT 1 FROM ${S}.flows fl WHERE fl.id = f.flow_id AND fl.updated_at > now() - $2 * interval '1 millisecond')
          LIMIT $1
        )
        SELECT m.flow_id, array_agg(DISTINCT m.dep_name) AS names FROM m JOIN quiet USING (flow_id) GROUP BY m.flow_id`,
      lockFlow: `SELECT id FROM ${S}.flows WHERE id = $1 FOR UPDATE SKIP LOCKED`,
      // one page of the flows untouched for $1 ms, in (updated_at, id) order after the cursor ($3, $4):
      // those left without runs are deleted (a flow whose runs are kept, e.g. key tombstones, is read
      // once a round, not once a pass); the last one read is the next cursor
      pruneFlows: `
        WITH c AS MATERIALIZED (
          SELECT f.id, f.updated_at FROM ${S}.flows f
          WHERE f.updated_at < now() - $1 * interval '1 millisecond'
            AND ($3::timestamptz IS NULL OR (f.updated_at >= $3::timestamptz AND (f.updated_at, f.id) > ($3::timestamptz, $4::text)))
          ORDER BY f.updated_at, f.id LIMIT $2
        ), d AS (
          -- the ids as an array: read by primary key, never a join that scans the flows
          DELETE FROM ${S}.flows f
          WHERE f.id = ANY (ARRAY(SELECT id FROM c)) AND f.updated_at < now() - $1 * interval '1 millisecond'
            AND NOT EXISTS (SELECT 1 FROM ${S}.runs r WHERE r.flow_id = f.id)
          RETURNING 1
        ), last AS (SELECT updated_at, id FROM c ORDER BY updated_at DESC, id DESC LIMIT 1)
        SELECT (SELECT count(*) FROM d)::int AS n, (SELECT count(*) FROM c)::int AS seen,
          (SELECT updated_at::text FROM last) AS at, (SELECT id FROM last) AS id`,
    };
  }

  /** Creates the flow's row; false when a flow with that id exists. */
  async createFlow(
    q: Queryable,
    f: { id: string; name: string | null; ignoreCancelled: boolean; ignoreFailed: boolean; ignoreDeleted: boolean },
  ): Promise<boolean> {
    const rows = await q.query(this.sql.createFlow, [f.id, f.name, f.ignoreCancelled, f.ignoreFailed, f.ignoreDeleted]);
    return rows.length > 0;
  }

  /** Locks the flow's row for an append (bumping its `updated_at`); undefined when there is none. */
  async touchFlow(q: Queryable, id: string): Promise<FlowRow | undefined> {
    const [row] = await q.query<FlowRow>(this.sql.touchFlow, [id]);
    return row;
  }

  /** The flow's row, or undefined. */
  async getFlow(q: Queryable, id: string): Promise<FlowRow | undefined> {
    const [row] = await q.query<FlowRow>(this.sql.getFlow, [id]);
    return row;
  }

  /** The flow's nodes among `names`, share-locked until commit (a dep cannot finish unseen meanwhile). */
  lockNodes(q: Queryable, flowId: string, names: string[]) {
    return q.query<{ id: string; name: string; status: RunStatus }>(this.sql.lockNodes, [flowId, names]);
  }

  /** The nodes of flow `flowId` keyed with one of `keys` (their workflow and key). */
  keyedNodes(q: Queryable, flowId: string, keys: { workflow: string; key: string }[]) {
    return q.query<{ name: string; workflow: string; key: string }>(this.sql.keyedNodes, [flowId, keys.map((k) => k.workflow), keys.map((k) => k.key)]);
  }

  /** The flow's nodes named `names`, locked for an update, with what a fresh run of each copies. */
  lockForRerun(q: Queryable, flowId: string, names: string[]) {
    return q.query<RerunNodeRow>(this.sql.lockForRerun, [flowId, names]);
  }

  /**
   * Replaces nodes by fresh runs (`rerunFlow`), once those are inserted: the old runs leave the
   * flow and their edges move to the new ones, open again. Returns the deps naming no node whose
   * edges had been resolved (the caller resolves them as deleted again).
   */
  async moveEdges(q: Queryable, flowId: string, oldIds: string[], newIds: string[]): Promise<string[]> {
    const rows = await q.query<{ dep_name: string }>(this.sql.moveEdges, [flowId, oldIds, newIds]);
    return rows.map((r) => r.dep_name);
  }

  /** Takes runs out of their flow (their node names are free again); they stay as runs of their own. */
  async detach(q: Queryable, ids: string[]): Promise<void> {
    await q.query(this.sql.detach, [ids]);
  }

  /** The nodes of flow `flowId` named `names` and every node they depend on, directly or not. */
  upstream(q: Queryable, flowId: string, names: string[]) {
    return q.query<{ name: string; deps: string[] }>(this.sql.upstream, [flowId, names]);
  }

  /** Whether a node of flow `flowId` depends on a node named in `names` (existing or not: a missing dep counts). */
  async dependedOn(q: Queryable, flowId: string, names: string[]): Promise<boolean> {
    const [row] = await q.query<{ yes: boolean }>(this.sql.dependedOn, [flowId, names]);
    return row.yes;
  }

  /** Inserts flow nodes (notifying the workers when one is pending); returns how many. */
  async insertNodes(q: Queryable, nodes: NewFlowNode[]): Promise<number> {
    const [row] = await q.query<{ n: number }>(this.sql.insertNodes, [JSON.stringify(nodes), this.channel]);
    return row.n;
  }

  /** Inserts dependency edges. */
  async insertEdges(q: Queryable, edges: NewFlowEdge[]): Promise<void> {
    if (edges.length) await q.query(this.sql.insertEdges, [JSON.stringify(edges)]);
  }

  /** Edges waiting on a missing dep named in `names` are no longer missing (the node now exists). */
  async clearMissing(q: Queryable, flowId: string, names: string[]): Promise<void> {
    await q.query(this.sql.clearMissing, [flowId, names]);
  }

  /**
   * Resolves the open edges leaving the named nodes with the given outcomes, in one statement;
   * returns how many nodes woke. The workflow of each node it cancelled (a dependency that did not
   * complete, and so on down the graph) is pushed to `cancelled`, as the database reports it.
   */
  async resolve(q: Queryable, flowId: string, names: string[], outcomes: DepOutcome[], cancelled?: string[]): Promise<number> {
    if (names.length === 0) return 0;
    const [row] = await q.query<{ woke: number; cancelled: string[] }>(this.sql.resolve, [flowId, names, outcomes]);
    if (cancelled) for (const workflow of row.cancelled) cancelled.push(workflow);
    return row.woke;
  }

  /** One node by name, or undefined. */
  async node(q: Queryable, flowId: string, name: string): Promise<RunRow | undefined> {
    const [row] = await q.query<RunRow>(this.sql.node, [flowId, name]);
    return row;
  }

  /** The flow's nodes (those named in `names` when given), by name. */
  nodes(q: Queryable, flowId: string, names: string[] | null): Promise<RunRow[]> {
    return q.query<RunRow>(this.sql.nodes, [flowId, names]);
  }

  /** One keyset page of the flow's nodes by name, after `afterName`. */
  page(q: Queryable, flowId: string, afterName: string | null, names: string[] | null, limit: number): Promise<RunRow[]> {
    return q.query<RunRow>(this.sql.page, [flowId, afterName, names, limit]);
  }

  /** Results of the flow's completed nodes other than `self` (only `names` when given). */
  recorded(q: Queryable, flowId: string, self: string, names: string[] | null) {
    return q.query<{ name: string; result: unknown }>(this.sql.recorded, [flowId, self, names]);
  }

  /** Every node of the flow in insertion order (for drawing). */
  graph(q: Queryable, flowId: string): Promise<FlowNodeRow[]> {
    return q.query<FlowNodeRow>(this.sql.graph, [flowId]);
  }

  /**
   * Resolves edges left open although their dep is final (missed wake-ups), each flow in a
   * transaction of `tx`; returns nodes woken. The workflow of each node cancelled (a dep that did
   * not complete) is pushed to `cancelled` once its transaction committed.
   */
  async repairMissedEdges(q: Queryable, tx: <T>(fn: (q: Queryable) => Promise<T>) => Promise<T>, limit: number, cancelled: string[] = []): Promise<number> {
    const flows = await q.query<{ flow_id: string; names: string[] }>(this.sql.missedEdges, [limit]);
    let woke = 0;
    for (const f of flows) {
      const got: string[] = [];
      woke += await tx(async (t) => {
        const finals = await t.query<{ name: string; status: RunStatus }>(this.sql.finalNodes, [f.flow_id, f.names]);
        return this.resolve(
          t,
          f.flow_id,
          finals.map((r) => r.name),
          finals.map((r) => depOutcome(r.status)!),
          got,
        );
      });
      cancelled.push(...got);
    }
    return woke;
  }

  /** Makes waiting nodes with no open edge left pending (a counter that went wrong); returns how many. */
  async repairStalled(q: Queryable, limit: number): Promise<number> {
    const [row] = await q.query<{ n: number }>(this.sql.stalledNodes, [limit, this.channel]);
    return row.n;
  }

  /**
   * Treats deps that name no node as deleted in flows quiet for `graceMs` (see README, "DAG
   * flows": the rule for `checkDeps: false`); `anyMissing` also covers edges not flagged missing
   * (a dep row that vanished unnoticed). Each flow is re-checked and resolved in a transaction of
   * `tx` holding the flow's row, so an append in progress (which locks it) is never raced. Looks at
   * up to `limit` flows; returns the number repaired. The workflow of each node cancelled (a dep
   * counted deleted) is pushed to `cancelled` once its transaction committed.
   */
  async repairMissing(
    q: Queryable,
    tx: <T>(fn: (q: Queryable) => Promise<T>) => Promise<T>,
    graceMs: number,
    limit: number,
    anyMissing: boolean,
    cancelled: string[] = [],
  ): Promise<number> {
    const candidates = await q.query<{ flow_id: string }>(this.sql.missingDeps, [limit, graceMs, anyMissing, null]);
    let repaired = 0;
    for (const c of candidates) {
      const got: string[] = [];
      repaired += await tx(async (t) => {
        if ((await t.query(this.sql.lockFlow, [c.flow_id])).length === 0) return 0;
        const [f] = await t.query<{ flow_id: string; names: string[] }>(this.sql.missingDeps, [1, graceMs, anyMissing, c.flow_id]);
        if (!f) return 0;
        await this.resolve(
          t,
          f.flow_id,
          f.names,
          f.names.map(() => 'deleted' as const),
          got,
        );
        return 1;
      });
      cancelled.push(...got);
    }
    return repaired;
  }

  /**
   * Deletes the flow rows with no runs left among the next `batch` rows untouched for `olderThanMs`
   * after cursor `after` (null: from the oldest). Returns how many it deleted and the cursor of the
   * next call (null once it reached the last: the next round starts again from the oldest).
   */
  async pruneFlows(
    q: Queryable,
    olderThanMs: number,
    batch: number,
    after: FlowPruneCursor | null = null,
  ): Promise<{ n: number; next: FlowPruneCursor | null }> {
    const [row] = await q.query<{ n: number; seen: number; at: string | null; id: string | null }>(this.sql.pruneFlows, [
      olderThanMs,
      batch,
      after?.at ?? null,
      after?.id ?? null,
    ]);
    return { n: row.n, next: row.seen < batch || row.at === null || row.id === null ? null : { at: row.at, id: row.id } };
  }
}
