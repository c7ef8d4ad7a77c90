import { Injectable } from '@nestjs/common';
import type { ValidationError } from 'class-validator';
import { RunNotFoundError, TimeoutError } from '../errors';
import { toMs, type Duration } from '../domain/duration';
import { callOptions } from '../domain/call-options';
import { isFinished, type RunInfo, type RunStatus } from '../domain/run-info';
import type { WaitKind } from '../domain/suspension';
import { isUuid } from '../domain/uuid';
import { clampLimit, limitProblem, statusFilterProblem, waitingForProblem, workflowRefProblem } from '../domain/filters';
import { assertValid, keyProblem, nameProblem, optionNames, optionsProblems, uuidProblem } from '../domain/validation';
import type { WorkflowRef } from '../definition/workflow-metadata';
import { WorkflowRegistry } from '../definition/workflow.registry';
import { DurableConnection } from '../core/durable.connection';
import { toRunInfo } from '../store/run-row';
import { HistoryStore } from '../store/history.store';
import { RunsStore } from '../store/runs.store';
import type { RunFilter, StepAttemptStatus } from '../store/runs.types';

/** Filters of {@link DurableService.listRuns}. */
export interface ListRunsOptions {
  workflow?: WorkflowRef;
  key?: string;
  status?: RunStatus | RunStatus[];
  flowId?: string;
  parentId?: string;
  /** Only runs `waiting` for this: `'input'` lists the runs waiting for someone's input, `'deps'` flow nodes waiting for their deps. */
  waitingFor?: WaitKind | 'deps';
  /** At most this many (default 50, max 1000). */
  limit?: number;
  /** The `id` of the last run of the previous page (the same as `before`). */
  cursor?: string;
  /** Only runs older than this run id: the next page, newest first. */
  before?: string;
  /** Only the runs just newer than this run id: the previous page (still newest first). */
  after?: string;
}

/** Filters of {@link DurableService.countRuns}. */
export type CountRunsFilter = Pick<ListRunsOptions, 'workflow' | 'status' | 'key' | 'flowId'>;

/** One attempt of a step (or of a step's compensation), as {@link DurableService.getRunHistory} lists it. */
export interface StepAttempt {
  /** Index of the step (for a compensation: of the step it undoes). */
  step: number;
  /** Its name — for a compensation, its method's (null when the workflow is not registered on this node). */
  name: string | null;
  /** Set on an attempt of a compensation. */
  compensation?: true;
  attempt: number;
  startedAt: Date;
  finishedAt: Date;
  status: StepAttemptStatus;
  /** The failure of a failed attempt. */
  error?: unknown;
  /** The node that ran it. */
  nodeId: string | null;
}

const LIST_RUNS_OPTION_NAMES = optionNames<ListRunsOptions>({
  workflow: true,
  key: true,
  status: true,
  flowId: true,
  parentId: true,
  waitingFor: true,
  limit: true,
  cursor: true,
  before: true,
  after: true,
});
const COUNT_FILTER_NAMES = optionNames<CountRunsFilter>({ workflow: true, status: true, key: true, flowId: true });

/** Most attempts `getRunHistory` returns. */
const HISTORY_LIMIT = 1000;

/** How often `waitForRun` looks at the run's status at first: every 25 ms for its first second. */
const WAIT_POLL_MS = 25;
/** How long `waitForRun` looks that often; after it, each wait doubles, up to {@link WAIT_POLL_MAX_MS}. */
const WAIT_EAGER_MS = 1_000;
/** The longest wait between two looks of `waitForRun` at a run that takes long. */
const WAIT_POLL_MAX_MS = 250;

/** Reads of runs: `getRun`, `waitForRun`, `listRuns`. */
@Injectable()
export class RunReader {
  constructor(
    private readonly connection: DurableConnection,
    private readonly registry: WorkflowRegistry,
    private readonly runs: RunsStore,
    private readonly history: HistoryStore,
  ) {}

  /** The run (with its `children`), or null. */
  async get(runId: string): Promise<RunInfo | null> {
    if (!isUuid(runId)) return null;
    const row = await this.runs.get(this.connection.db, runId);
    return row ? toRunInfo(row, this.registry.stepName) : null;
  }

  /**
   * Resolves once the run has finished; rejects with `TimeoutError` after `timeout`. Looks at the
   * run's status alone (every 25 ms for a second, then less and less often, at least every 250 ms)
   * and reads the whole run once it has finished: a wait costs the same whatever the run holds
   * (a parent of many children, a big input).
   */
  async waitFor(runId: string, given?: { timeout?: Duration } | null): Promise<RunInfo> {
    // a bare timeout where the options go (`waitForRun(id, 300)`) would otherwise wait forever
    const { timeout } = callOptions('waitForRun', given, ['timeout']);
    const timeoutMs = timeout === undefined ? undefined : toMs(timeout, 'timeout');
    const from = Date.now();
    const until = timeoutMs === undefined ? Infinity : from + timeoutMs;
    let pause = WAIT_POLL_MS;
    if (!isUuid(runId)) throw new RunNotFoundError(runId);
    for (;;) {
      const status = await this.runs.status(this.connection.db, runId);
      if (status === undefined) throw new RunNotFoundError(runId);
      // read whole once finished (a retry may have made it go again in between: then it waits on)
      const run = isFinished(status) ? await this.get(runId) : undefined;
      if (run && isFinished(run.status)) return run;
      if (Date.now() >= until) throw new TimeoutError(`run ${runId} did not finish within ${timeoutMs}ms`);
      if (Date.now() - from >= WAIT_EAGER_MS) pause = Math.min(WAIT_POLL_MAX_MS, pause * 2);
      await new Promise((r) => setTimeout(r, Math.min(pause, Math.max(1, until - Date.now()))));
    }
  }

  /**
   * Runs matching the filters, newest first; the next page with `before: lastRun.id` (or `cursor`),
   * the previous one with `after: firstRun.id`.
   */
  async list(options: ListRunsOptions | null = {}): Promise<RunInfo[]> {
    const o = options ?? {};
    assertValid('listRuns', [
      ...optionsProblems(o, 'options', LIST_RUNS_OPTION_NAMES),
      ...this.filterProblems(o),
      waitingForProblem(o.waitingFor),
      limitProblem(o.limit),
      uuidProblem(o.cursor, 'cursor'),
      uuidProblem(o.before, 'before'),
      uuidProblem(o.after, 'after'),
      uuidProblem(o.parentId, 'parentId'),
    ]);
    const rows = await this.runs.list(this.connection.db, {
      ...this.filter(o),
      parentId: o.parentId ?? undefined,
      waitingFor: o.waitingFor ?? undefined,
      before: o.before ?? o.cursor ?? undefined,
      after: o.after ?? undefined,
      limit: clampLimit(o.limit, 50),
    });
    return rows.map((r) => toRunInfo(r, this.registry.stepName));
  }

  /** How many runs match (at most `cap`, default 10 000: `capped` when there may be more). */
  async count(filter: CountRunsFilter | null = {}, options: { cap?: number } | null = {}): Promise<{ count: number; capped: boolean }> {
    const f = filter ?? {};
    const o = options ?? {};
    assertValid('countRuns', [
      ...optionsProblems(f, 'filter', COUNT_FILTER_NAMES),
      ...this.filterProblems(f),
      ...optionsProblems(o, 'options', ['cap']),
      limitProblem(o.cap, 'cap'),
    ]);
    const cap = clampLimit(o.cap, 10_000, 1_000_000);
    const n = await this.runs.count(this.connection.db, this.filter(f), cap + 1);
    return { count: Math.min(n, cap), capped: n > cap };
  }

  /**
   * Every attempt of every step of the run (the first 1000), in the order they ended. `known`: the
   * run's workflow, when the caller has read the run (else the run is read to find it).
   */
  async historyOf(runId: string, known?: Pick<RunInfo, 'workflow'>): Promise<StepAttempt[]> {
    const run = known ?? (await this.get(runId));
    if (!run) throw new RunNotFoundError(runId);
    const rows = await this.history.list(this.connection.db, runId, HISTORY_LIMIT);
    const def = this.registry.find(run.workflow);
    return rows.map((r) => {
      // a compensation's attempt is stored at -(step + 1); its failure is the run's error's `compensation`
      const compensation = r.step < 0;
      const step = compensation ? -r.step - 1 : r.step;
      const error = compensation ? ((r.error as { compensation?: { error?: unknown } } | null)?.compensation?.error ?? r.error) : r.error;
      return {
        step,
        name: (compensation ? def?.steps[step]?.compensate : def?.steps[step]?.name) ?? null,
        ...(compensation ? { compensation: true as const } : {}),
        attempt: r.attempt,
        startedAt: r.started_at,
        finishedAt: r.finished_at,
        status: r.status,
        ...(error ? { error } : {}),
        nodeId: r.node_id,
      };
    });
  }

  /** Why the filters of workflow, key, status and flow cannot filter (absent ones, undefined or null, do not filter). */
  private filterProblems(o: CountRunsFilter): (ValidationError | undefined)[] {
    return [
      workflowRefProblem(o.workflow),
      keyProblem(o.key),
      statusFilterProblem(o.status),
      o.flowId === undefined || o.flowId === null ? undefined : nameProblem(o.flowId, 'flowId'),
    ];
  }

  /** The store's filter of workflow, key, status and flow. */
  private filter(o: CountRunsFilter): Omit<RunFilter, 'limit'> {
    return {
      workflow: this.registry.filterName(o.workflow),
      key: o.key ?? undefined,
      status: o.status === undefined || o.status === null ? undefined : ([] as RunStatus[]).concat(o.status),
      flowId: o.flowId ?? undefined,
    };
  }
}
