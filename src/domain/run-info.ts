/** Every status a run can have. */
export type RunStatus = 'pending' | 'running' | 'waiting' | 'compensating' | 'completed' | 'failed' | 'cancelled' | 'compensated' | 'compensation_failed';

/** Statuses of a run that is still going (it always holds its key). */
export const GOING_STATUSES: readonly RunStatus[] = ['pending', 'running', 'waiting', 'compensating'];

/** Statuses of a finished run. */
export const FINISHED_STATUSES: readonly RunStatus[] = ['completed', 'failed', 'cancelled', 'compensated', 'compensation_failed'];

/** Every run status: the going ones, then the finished ones. */
export const RUN_STATUSES: readonly RunStatus[] = [...GOING_STATUSES, ...FINISHED_STATUSES];

/** True when the run has finished (for good, until a retry). */
export const isFinished = (status: RunStatus): boolean => FINISHED_STATUSES.includes(status);

/** A run as `getRun`, `listRuns` and `waitForRun` return it. */
export interface RunInfo {
  id: string;
  workflow: string;
  status: RunStatus;
  key: string | null;
  holdsKey: boolean;
  input: unknown;
  context: Record<string, unknown>;
  result: unknown;
  /** `{ name, message, code?, stack? }` of the last failure, or null. */
  error: unknown;
  /** Attempt number of the current step (1-based; 0 before the first claim). */
  attempt: number;
  /** Name of the step the run is at (the next to run), or null once past the last. */
  step: string | null;
  /** Index of that step. */
  stepIndex: number;
  /** When the run is (or was) due. */
  runAt: Date;
  runsAfterId: string | null;
  parentId: string | null;
  flowId: string | null;
  flowName: string | null;
  name: string | null;
  deps: string[];
  /** How many starts found this run holding its key. */
  readds: number;
  /**
   * The node that holds it: set while `running` (or `compensating` on a node), null while `pending`
   * or `waiting`; a run that ended on a node keeps it, one that ended while none held it has null.
   */
  nodeId: string | null;
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
  /**
   * Set on a key tombstone (`retention.keys`): the run was pruned — its input, result, error,
   * context and history are gone — and its row is kept only so that it keeps holding its key.
   */
  prunedAt: Date | null;
  /** What a `waiting` run waits for: a sleep, an event or input (`name`), its children; `until` = its timer. */
  waitingFor: { kind: 'sleep' | 'event' | 'input' | 'children'; name: string | null; until: Date | null } | null;
  /** Ids of its child runs (`getRun` and `waitForRun`; `[]` in `listRuns` — use `listRuns({ parentId })`). */
  children: string[];
  /** The last value a step reported with `ctx.progress` (JSON), or null. */
  progress: unknown;
  /** Its priority among due runs (higher first). */
  priority: number;
}

/** What a start did; `runId` is the run the outcome names (see docs/service.md#startresult). */
export interface StartResult {
  runId: string;
  outcome: 'created' | 'useExisting' | 'cancelExisting' | 'runAgain' | 'sendEvent' | 'debounced';
}

/** How a history line names an attempt: the step's (or compensation's) name, else `#<index>`; a compensation says so. */
export const attemptLabel = (a: { step: number; name: string | null; compensation?: true }): string =>
  `${a.name ?? `#${a.step}`}${a.compensation ? ' (compensation)' : ''}`;
