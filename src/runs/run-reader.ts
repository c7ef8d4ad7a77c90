import { Injectable } from '@nestjs/common';
import { RunNotFoundError, TimeoutError } from '../errors';
import { toMs, type Duration } from '../domain/duration';
import { isFinished, type RunInfo, type RunStatus } from '../domain/run-info';
import type { WaitKind } from '../domain/suspension';
import { isUuid } from '../domain/uuid';
import { assertValid, uuidProblem } from '../domain/validation';
import type { WorkflowRef } from '../definition/workflow-metadata';
import { WorkflowRegistry } from '../definition/workflow.registry';
import { DurableConnection } from '../core/durable.connection';
import { toRunInfo } from '../store/run-row';
import { RunsStore } from '../store/runs.store';

/** Filters of {@link DurableService.listRuns}. */
export interface ListRunsOptions {
  workflow?: WorkflowRef;
  key?: string;
  status?: RunStatus | RunStatus[];
  flowId?: string;
  parentId?: string;
  /** Only runs `waiting` for this: `'input'` lists the runs waiting for someone's input. */
  waitingFor?: WaitKind;
  /** At most this many (default 50, max 1000). */
  limit?: number;
  /** The `id` of the last run of the previous page. */
  cursor?: string;
}

/** How often `waitForRun` looks at the run. */
const WAIT_POLL_MS = 25;

/** Reads of runs: `getRun`, `waitForRun`, `listRuns`. */
@Injectable()
export class RunReader {
  constructor(
    private readonly connection: DurableConnection,
    private readonly registry: WorkflowRegistry,
    private readonly runs: RunsStore,
  ) {}

  /** The run (with its `children`), or null. */
  async get(runId: string): Promise<RunInfo | null> {
    if (!isUuid(runId)) return null;
    const row = await this.runs.get(this.connection.db, runId);
    return row ? toRunInfo(row, this.registry.stepName) : null;
  }

  /** Resolves once the run has finished; rejects with `TimeoutError` after `timeout`. */
  async waitFor(runId: string, options: { timeout?: Duration } = {}): Promise<RunInfo> {
    const timeoutMs = options.timeout === undefined ? undefined : toMs(options.timeout, 'timeout');
    const until = timeoutMs === undefined ? Infinity : Date.now() + timeoutMs;
    for (;;) {
      const run = await this.get(runId);
      if (!run) throw new RunNotFoundError(runId);
      if (isFinished(run.status)) return run;
      if (Date.now() >= until) throw new TimeoutError(`run ${runId} did not finish within ${timeoutMs}ms`);
      await new Promise((r) => setTimeout(r, Math.min(WAIT_POLL_MS, Math.max(1, until - Date.now()))));
    }
  }

  /** Runs matching the filters, newest first; page with `cursor: lastRun.id`. */
  async list(options: ListRunsOptions = {}): Promise<RunInfo[]> {
    const limit = Math.min(Math.max(1, Math.floor(options.limit ?? 50)), 1000);
    assertValid('listRuns', [uuidProblem(options.cursor, 'cursor'), uuidProblem(options.parentId, 'parentId')]);
    const status = options.status === undefined ? undefined : ([] as RunStatus[]).concat(options.status);
    const rows = await this.runs.list(this.connection.db, {
      workflow: options.workflow === undefined ? undefined : this.registry.nameOf(options.workflow),
      key: options.key,
      status,
      flowId: options.flowId,
      parentId: options.parentId,
      waitingFor: options.waitingFor,
      cursor: options.cursor,
      limit,
    });
    return rows.map((r) => toRunInfo(r, this.registry.stepName));
  }
}
