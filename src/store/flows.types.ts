import type { RunStatus } from '../domain/run-info';

/** A `flows` row. */
export interface FlowRow {
  id: string;
  name: string | null;
  ignore_cancelled: boolean;
  ignore_failed: boolean;
  ignore_deleted: boolean;
  created_at: Date;
  updated_at: Date;
}

/** Where a pass of flow-row pruning stopped: the last flow it read (its `updated_at` as text, full precision). */
export interface FlowPruneCursor {
  at: string;
  id: string;
}

/** A flow node to insert (a run of `workflow`). */
export interface NewFlowNode {
  id: string;
  workflow: string;
  input: unknown;
  timeout_ms: number | null;
  flow_id: string;
  flow_name: string | null;
  name: string;
  /** Its key (null: none); a keyed node holds it (the caller made sure it was free). */
  key: string | null;
  deps: string[];
  /** Deps not yet resolved; > 0 inserts the node `waiting`, else `pending`. */
  deps_left: number;
  /** Its workflow's priority. */
  priority: number;
  /** The group its workflow's limits count it in (null without limits). */
  group_key: string | null;
  /** The trace context of the call that added it (W3C carrier; null: none), continued by its run's spans. */
  trace: Record<string, string> | null;
}

/** An edge to insert: `run_id` depends on the node named `dep_name`. */
export interface NewFlowEdge {
  flow_id: string;
  dep_name: string;
  run_id: string;
  ignore_cancelled: boolean;
  ignore_failed: boolean;
  ignore_deleted: boolean;
  /** The dep named no node when the edge was added (append with `checkDeps: false`). */
  missing: boolean;
}

/** What a dep's final status means for its dependants. */
export type DepOutcome = 'completed' | 'failed' | 'cancelled' | 'deleted';

/** A node as the graph export needs it. */
export interface FlowNodeRow {
  id: string;
  name: string;
  workflow: string;
  deps: string[] | null;
  status: RunStatus;
}

/** A node `rerunFlow` runs again: what its fresh run copies, and its status. */
export interface RerunNodeRow {
  id: string;
  name: string;
  workflow: string;
  key: string | null;
  input: unknown;
  timeout_ms: number | null;
  priority: number;
  group_key: string | null;
  deps: string[];
  status: RunStatus;
  /** A key tombstone: its input is gone. */
  pruned: boolean;
}

/** Maps a final run status to the outcome its dependants see. */
export function depOutcome(status: RunStatus): DepOutcome | undefined {
  switch (status) {
    case 'completed':
      return 'completed';
    case 'cancelled':
      return 'cancelled';
    case 'failed':
    case 'compensated':
    case 'compensation_failed':
      return 'failed';
    default:
      return undefined;
  }
}
