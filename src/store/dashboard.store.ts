import type { Queryable } from './db';
import type { FlowNodeRow } from './flows.types';
import { runColumns, type RunRow } from './run-row';
import { statusLiterals } from './sql';
import { FINISHED_STATUSES, type RunStatus } from '../domain/run-info';

/** A run with its first child ids by id (in `children`) and how many children it has, counted up to a cap. */
export interface RunWithChildCount extends RunRow {
  child_count: number;
}

/** A flow node as its page lists it: with whether it is a key tombstone (pruned: its input is gone). */
export interface DashboardFlowNode extends FlowNodeRow {
  pruned: boolean;
}

/** The nodes an upstream walk starts from: those not finished (`'going'`), or the key tombstones (`'pruned'`). */
export type FlowSeed = 'going' | 'pruned';

/** The condition on a node `r` of each {@link FlowSeed}. */
const SEEDS: Record<FlowSeed, string> = {
  going: `r.status NOT IN (${statusLiterals(FINISHED_STATUSES)})`,
  pruned: 'r.pruned_at IS NOT NULL',
};

/** Of the names $2, the nodes of flow $1 that match `seed` or that such a node depends on, directly or not. */
const upstream = (S: string, seed: string) => `
        WITH RECURSIVE up AS (
          SELECT r.name, r.deps FROM ${S}.runs r WHERE r.flow_id = $1 AND ${seed}
          UNION
          SELECT r.name, r.deps FROM up JOIN ${S}.runs r ON r.flow_id = $1 AND r.name = ANY(up.deps)
        )
        SELECT DISTINCT name FROM up WHERE name = ANY($2::text[])`;

/** How many nodes of a flow are in one status. */
export interface FlowStatusCount {
  status: RunStatus;
  n: number;
}

/**
 * The dashboard's bounded reads: what a page shows and no more, whatever the size of the family or
 * the flow it shows. A run's first child ids by id and their count up to a cap (through
 * `runs_children`), rather than every child id; a flow's nodes counted per status and its first
 * nodes, rather than every node row.
 */
export class DashboardStore {
  private readonly sql: Record<string, string>;
  /** The upstream walk from each seed. */
  private readonly upstream: Record<FlowSeed, string>;

  constructor(schema: string) {
    const S = `"${schema}"`;
    this.sql = {
      // a parent's first $3 children by id (none with $3 = 0), read in id order from one range of
      // runs_children (parent_id, id): a parent of many costs the cap, not its family, and the $2
      // listed are the family's first by id, however many it has. The parent is a range, not an
      // equality, and leads the order, so the planner cannot take it for a constant and walk the
      // whole table in id order instead (runs_pkey: every run made before the family read first)
      run: `
        WITH c AS MATERIALIZED (
          SELECT id FROM ${S}.runs WHERE parent_id >= $1 AND parent_id <= $1 ORDER BY parent_id, id LIMIT $3)
        SELECT ${runColumns(S, 'r')},
          ARRAY(SELECT c.id FROM c ORDER BY c.id LIMIT $2) AS children,
          (SELECT count(*)::int FROM c) AS child_count
        FROM ${S}.runs r WHERE r.id = $1`,
      // statuses in the order of their first node (as a walk of the nodes in insertion order meets them)
      flowCounts: `SELECT status, count(*)::int AS n FROM ${S}.runs WHERE flow_id = $1 GROUP BY status ORDER BY min(id::text)`,
      // the flow's nodes are read through their index (runs_flow_node) and then sorted: ORDER BY id
      // LIMIT alone may be planned as a walk of the whole table in id order (runs_pkey), every run
      // made before the flow read on each refresh
      flowNodes: `
        WITH n AS MATERIALIZED (SELECT id, name, workflow, deps, status, pruned_at IS NOT NULL AS pruned FROM ${S}.runs WHERE flow_id = $1)
        SELECT * FROM n ORDER BY id LIMIT $2`,
    };
    this.upstream = { going: upstream(S, SEEDS.going), pruned: upstream(S, SEEDS.pruned) };
  }

  /**
   * Run `id` with its children counted up to `counted` (in `child_count`) and its first `children`
   * children by id (at most `counted` of them), or undefined. At most `counted` children are read;
   * with `counted` 0 none (a run looked up by id).
   */
  async run(q: Queryable, id: string, children: number, counted: number): Promise<RunWithChildCount | undefined> {
    const [row] = await q.query<RunWithChildCount>(this.sql.run, [id, children, counted]);
    return row;
  }

  /** The nodes of flow `flowId` per status, statuses in the order of their first node. */
  flowCounts(q: Queryable, flowId: string): Promise<FlowStatusCount[]> {
    return q.query<FlowStatusCount>(this.sql.flowCounts, [flowId]);
  }

  /** The first `limit` nodes of flow `flowId`, in insertion order. */
  flowNodes(q: Queryable, flowId: string, limit: number): Promise<DashboardFlowNode[]> {
    return q.query<DashboardFlowNode>(this.sql.flowNodes, [flowId, limit]);
  }

  /**
   * Of `names`, the nodes of flow `flowId` that are `seed` nodes or that one depends on, directly or
   * not: with `'going'` (a node not finished), those `rerunFlow` would not take as `from` now; with
   * `'pruned'` (a key tombstone), those it refuses as `from` (a tombstone has no input to run again with).
   */
  async flowUpstream(q: Queryable, flowId: string, seed: FlowSeed, names: string[]): Promise<Set<string>> {
    const rows = await q.query<{ name: string }>(this.upstream[seed], [flowId, names]);
    return new Set(rows.map((r) => r.name));
  }
}
