import { RunNotFoundError } from '../errors';
import { isFinished, type RunInfo, type RunStatus } from '../domain/run-info';
import { isUuid } from '../domain/uuid';
import { nameProblem } from '../domain/validation';
import { WorkflowRegistry } from '../definition/workflow.registry';
import { FlowGraph, reachable } from '../flows/flow.graph';
import type { DashboardStore, FlowStatusCount } from '../store/dashboard.store';
import type { Queryable } from '../store/db';
import type { FlowsStore } from '../store/flows.store';
import { toRunInfo } from '../store/run-row';

/** A run as its page shows it: its first children in `run.children`, and how many it has, up to a cap. */
export interface RunView {
  run: RunInfo;
  /** Its number of children, up to the cap asked for. */
  childCount: number;
  /** It has more children than the cap (`childCount` is the cap). */
  moreChildren: boolean;
}

/** A flow as its page shows it. */
export interface FlowView {
  /** The flow's nodes up to the most shown (all of them when there are no more), in insertion order. */
  graph: FlowGraph;
  /** It has more nodes than `graph` holds (it is not drawn). */
  more: boolean;
  /** Its number of nodes. */
  total: number;
  /** Its nodes per status, statuses in the order of their first node. */
  counts: { status: RunStatus; n: number }[];
  /** Of the nodes in `graph`, those `rerunFlow` would take as `from` now (asked for: `rerun`). */
  rerunnable?: Set<string>;
  /**
   * Of the nodes in `graph`, those `rerunFlow` refuses because they, or a node downstream of them,
   * are key tombstones (pruned: their input is gone) (asked for: `rerun`).
   */
  pruned?: Set<string>;
  /** Of the nodes in `graph`, the key tombstones themselves (asked for: `rerun`). */
  tombstones?: Set<string>;
}

/** Nodes per status, statuses in the order of their first node (as `DashboardStore.flowCounts` counts a flow). */
function countStatuses(nodes: { status: RunStatus }[]): FlowStatusCount[] {
  const counts = new Map<RunStatus, number>();
  for (const { status } of nodes) counts.set(status, (counts.get(status) ?? 0) + 1);
  return [...counts].map(([status, n]) => ({ status, n }));
}

/**
 * The reads behind the run and flow pages, bounded by what those pages show: the public
 * `getRun` (every child id) and `getFlowGraph` (every node) are not.
 */
export class PageReads {
  constructor(
    private readonly db: Queryable,
    private readonly registry: WorkflowRegistry,
    private readonly store: DashboardStore,
    private readonly flows: FlowsStore,
  ) {}

  /**
   * Run `runId` with its children counted up to `counted` and its first `children` children by id,
   * or null. With `counted` 0 (the default) no child is read.
   */
  async run(runId: string, children = 0, counted = 0): Promise<RunView | null> {
    if (!isUuid(runId)) return null;
    // one child more than the cap is read, to know whether there are more
    const row = await this.store.run(this.db, runId, children, counted > 0 ? counted + 1 : 0);
    if (!row) return null;
    return { run: toRunInfo(row, this.registry.stepName), childCount: Math.min(row.child_count, counted), moreChildren: row.child_count > counted };
  }

  /**
   * Flow `flowId`: its first `shown` nodes (one more is read, to know whether there are more) and
   * its nodes per status; with `rerun`, which nodes read can be run again now. A flow of no more
   * than `shown` nodes is read whole, and counted from the nodes read (no statement of its own).
   * `RunNotFoundError` when no flow has that id.
   */
  async flow(flowId: string, shown: number, rerun: boolean): Promise<FlowView> {
    // an id no flow can have (empty, too long, a NUL) is not sent to the database
    if (nameProblem(flowId)) throw new RunNotFoundError(String(flowId));
    const { db, store } = this;
    const [flow, rows] = await Promise.all([this.flows.getFlow(db, flowId), store.flowNodes(db, flowId, shown + 1)]);
    if (!flow && rows.length === 0) throw new RunNotFoundError(flowId);
    const read = rows.slice(0, shown);
    const graph = new FlowGraph(
      read.map((r) => ({ name: r.name, workflow: r.workflow, deps: r.deps ?? [], runId: r.id, status: r.status })),
      flowId,
      flow?.name ?? null,
    );
    const more = rows.length > shown;
    // a flow read whole is counted here; a bigger one by a statement of its own (a node added
    // between the two statements is counted or not)
    const counts = more ? await store.flowCounts(db, flowId) : countStatuses(read);
    const total = Math.max(
      counts.reduce((sum, c) => sum + c.n, 0),
      rows.length,
    );
    if (!rerun) return { graph, more, total, counts };
    // rerunFlow refuses a node when it or a node downstream of it is going or is a key tombstone
    const names = read.map((r) => r.name);
    const tombstones = read.filter((r) => r.pruned).map((r) => r.name);
    let blocked: Set<string>;
    let pruned: Set<string>;
    if (!more) {
      // a flow read whole: the nodes upstream of each kind, here
      const deps = new Map(read.map((r) => [r.name, r.deps ?? []]));
      const upstreamOf = (starts: string[]) => new Set(reachable(starts, (name) => deps.get(name) ?? []));
      blocked = upstreamOf(read.filter((r) => !isFinished(r.status)).map((r) => r.name));
      pruned = upstreamOf(tombstones);
    } else {
      // a big flow: the nodes listed that a node going, or a tombstone, is downstream of (none going: no read)
      const going = counts.some((c) => !isFinished(c.status));
      [blocked, pruned] = await Promise.all([
        going ? store.flowUpstream(db, flowId, 'going', names) : new Set<string>(),
        store.flowUpstream(db, flowId, 'pruned', names),
      ]);
    }
    return {
      graph,
      more,
      total,
      counts,
      rerunnable: new Set(names.filter((n) => !blocked.has(n) && !pruned.has(n))),
      pruned,
      tombstones: new Set(tombstones),
    };
  }
}
