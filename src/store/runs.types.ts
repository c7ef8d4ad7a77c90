import type { RunStatus } from '../domain/run-info';
import type { TxMark } from './activity.store';
import type { RunRow } from './run-row';
import type { WaitRow } from './waits.store';

/** A run to insert. */
export interface NewRun {
  id: string;
  workflow: string;
  key: string | null;
  holds_key: boolean;
  input: unknown;
  /** ISO time; null = now. */
  run_at: string | null;
  /** Due this long after now (the database's clock) when `run_at` is null. */
  delay_ms?: number | null;
  timeout_ms: number | null;
  parent_id?: string | null;
  /** A child: the count of its parent's children it is in (see `WaitsStore.recordChildren`). */
  parent_wait?: number | null;
  runs_after_id?: string | null;
  trace?: Record<string, string> | null;
  /** Debounced runs: the latest time a restarted debounce wait may reach (null = no cap). */
  debounce_until?: string | null;
  /** Debounced runs: that latest time as this long after now (the database's clock), instead. */
  debounce_ms?: number | null;
  /** Claimed before due runs of lower priority (default 0). */
  priority?: number;
  /** The group its workflow's limits count it in ('' the whole workflow); null without limits. */
  group_key?: string | null;
}

/** What a keyed start's statement did: inserted the run, or found a holder whose status settles the start (`rejected`: with KeyTakenError, else useExisting). */
export type StartAnswer = 'created' | { holderId: string; rejected: boolean };

/** A start for {@link RunsStore.insertOrAnswer}: the run, and the holder statuses that settle it. */
export interface StartRow {
  run: NewRun;
  settled: { useExisting: RunStatus[]; reject: RunStatus[] };
}

/** The holder of a key, locked, as the key policy needs it. */
export interface HolderRow {
  id: string;
  status: RunStatus;
  picked_up: boolean;
  debouncing: boolean;
  input: unknown;
}

/** Who claims: the node, its heartbeat's freshness bound (`nodeTimeout`) and the claim's number (see `claimUpdate`). */
export interface ClaimBy {
  nodeId: string;
  nodeTimeoutMs: number;
  seq: number;
}

/** A claimed run as the executor needs it. */
export type ClaimedRow = Partial<Pick<RunRow, 'flow_id' | 'flow_name' | 'name' | 'deps' | 'priority'>> &
  Pick<
    RunRow,
    | 'id'
    | 'workflow'
    | 'key'
    | 'input'
    | 'context'
    | 'step'
    | 'attempt'
    | 'epoch'
    | 'deadline_at'
    | 'parent_id'
    | 'trace'
    | 'run_at'
    // waits/sagas: `compensating` when claimed to go on compensating (cursor `comp_step`, original `error`)
    | 'status'
    | 'comp_step'
    | 'error'
  > & {
    /** The wait calls recorded for the claimed step, by call number (so a resumed step needs no round trip to find them). */
    waits?: Record<string, WaitRow> | null;
    /** The database's clock at the claim (epoch ms): the run's times (its deadline, its timers) are on that clock, not the node's. */
    db_now_ms: number;
  };

/** One state change of a claimed run, applied only while this execution still owns it. */
export interface Transition {
  id: string;
  epoch: number;
  status: RunStatus;
  step?: number;
  attempt?: number;
  context?: Record<string, unknown>;
  result?: unknown;
  /** Merged into `results` (step name → return value). */
  results?: Record<string, unknown>;
  error?: unknown;
  /** Due again after this many ms (retries). */
  delay_ms?: number;
  final?: boolean;
  /** `waiting`: what for (`sleep` | `event` | `input` | `children`), the event/input name, when its timer ends (ISO). */
  wait_kind?: string;
  wait_name?: string | null;
  wake_at?: string | null;
  /** `compensating`: the next step index whose compensation runs. */
  comp_step?: number;
  /** Give the run up (node_id = NULL) while keeping its status (a compensation retry waits for its delay). */
  release?: boolean;
  /** The step attempt whose outcome this is (recorded for `getRunHistory`): step index, attempt, outcome, its times (epoch milliseconds). */
  tried_step?: number;
  tried_attempt?: number;
  tried_status?: StepAttemptStatus;
  tried_from_ms?: number;
  tried_to_ms?: number;
  /** The latest `ctx.progress` value not yet written by a heartbeat. */
  progress?: unknown;
}

/** How a step attempt ended: its step completed, it failed, or a wait suspended it. */
export type StepAttemptStatus = 'completed' | 'failed' | 'suspended';

/** The runs one statement ended (`cancel`, the timeout sweep). */
export interface EndedRuns {
  /** Each with its workflow and the step it was at. */
  runs: { id: string; workflow: string; step: number }[];
  /**
   * Set when one of them held its key, had children or was a flow node: the statement's
   * transaction, in which the triggers may have handed that key to the run waiting behind it (or
   * cancelled that run), cancelled its unfinished children or its flow dependants
   * (`ActivityStore.triggerOutcomes`).
   */
  tx: TxMark | null;
}

/** What the timeout sweep did: `runs` failed, `compensating` turned to compensating (their compensations run when a node claims them). */
export interface TimedOutRuns extends EndedRuns {
  compensating: EndedRuns['runs'];
}

/** Filters of `listRuns`. */
export interface RunFilter {
  workflow?: string;
  key?: string;
  status?: RunStatus[];
  flowId?: string;
  parentId?: string;
  /** Only runs older than this run id. */
  before?: string;
  /** Only runs newer than this run id. */
  after?: string;
  limit: number;
  /** Only `waiting` runs that wait for this (`sleep`, `event`, `input`, `children`). */
  waitingFor?: string;
}
