import type { RunInfo, RunStatus } from '../domain/run-info';
import type { WaitKind } from '../domain/suspension';

/**
 * The select list of a `runs` row read for {@link toRunInfo} (`r` is the table's alias in the
 * statement, `S` the quoted schema): every column and the re-adds still in the activity log.
 */
export function runColumns(S: string, r: string): string {
  return `${r}.*, (SELECT count(*) FROM ${S}.activity a WHERE a.run_id = ${r}.id AND a.kind = 'key_duplicate')::int AS readds_logged`;
}

/** A `runs` row as node-postgres returns it. */
export interface RunRow {
  id: string;
  workflow: string;
  key: string | null;
  holds_key: boolean;
  status: RunStatus;
  input: unknown;
  context: Record<string, unknown>;
  result: unknown;
  results: Record<string, unknown>;
  error: unknown;
  step: number;
  attempt: number;
  run_at: Date;
  timeout_ms: number | null;
  deadline_at: Date | null;
  node_id: string | null;
  epoch: number;
  cancel_reason: string | null;
  parent_id: string | null;
  flow_id: string | null;
  flow_name: string | null;
  name: string | null;
  deps: string[] | null;
  runs_after_id: string | null;
  /** Re-adds whose `key_duplicate` records were pruned from the activity log. */
  readds: number;
  /** Re-adds still in the activity log (selected by {@link runColumns}). */
  readds_logged?: number;
  trace: Record<string, string> | null;
  created_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
  /** Set on a key tombstone (migration 1733040013000). */
  pruned_at?: Date | null;
  // waits, sagas, children (migration 1733040002000)
  wait_kind?: string | null;
  wait_name?: string | null;
  wake_at?: Date | null;
  inbox?: string[];
  comp_step?: number | null;
  has_children?: boolean;
  /** The last value a step reported with `ctx.progress` (queue controls, migration 1733040012000). */
  progress?: unknown;
  /** Claimed before due runs of lower priority. */
  priority?: number;
  /** Ids of the child runs (selected by `get` only). */
  children?: string[];
}

/** Maps a row to the public {@link RunInfo}; `stepName` turns the cursor into a step name. */
export function toRunInfo(row: RunRow, stepName: (workflow: string, index: number) => string | null): RunInfo {
  return {
    id: row.id,
    workflow: row.workflow,
    status: row.status,
    key: row.key,
    holdsKey: row.holds_key,
    input: row.input,
    context: row.context ?? {},
    result: row.result,
    error: row.error,
    attempt: row.attempt,
    step: stepName(row.workflow, row.step),
    stepIndex: row.step,
    runAt: row.run_at,
    runsAfterId: row.runs_after_id,
    parentId: row.parent_id,
    flowId: row.flow_id,
    flowName: row.flow_name,
    name: row.name,
    deps: row.deps ?? [],
    readds: row.readds + (row.readds_logged ?? 0),
    nodeId: row.node_id,
    createdAt: row.created_at,
    startedAt: row.started_at,
    finishedAt: row.finished_at,
    prunedAt: row.pruned_at ?? null,
    waitingFor: row.status === 'waiting' && row.wait_kind ? { kind: row.wait_kind as WaitKind, name: row.wait_name ?? null, until: row.wake_at ?? null } : null,
    children: row.children ?? [],
    progress: row.progress ?? null,
    priority: row.priority ?? 0,
  };
}
