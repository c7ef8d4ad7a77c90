import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { KeyContendedError, KeyTakenError, NoKeyError, NotCancellableError, NotFailedError, NotFinishedError, RunNotFoundError, TimeoutError } from './errors';
import { deliverEvent, type SendEventOutcome } from './runs/event-delivery';
import type { WaitKind } from './domain/suspension';
import { KeyInsights, type ActivityEvent, type KeyInfo, type KeyStats, type ListActivityOptions } from './runs/key-insights';
import { toMs, type Duration } from './domain/duration';
import type { WorkflowRef } from './definition/workflow.registry';
import { DurableCore } from './core/durable.core';
import { Scheduler, type ScheduleInfo } from './schedules/scheduler';
import { emitKeyMetric, emitRunFinished } from './observe/telemetry';
import type { ScheduleOptions } from './definition/schedule.decorator';
import { Maintenance } from './worker/maintenance';
import { countKeyHandoffs } from './runs/key-handoffs';
import { FlowsEngine, type AppendFlowOptions, type StartFlowResult } from './flows/flows.engine';
import type { FlowBuilder, FlowOptions } from './flows/flow.builder';
import type { FlowGraph } from './flows/flow.graph';
import { MAX_HANDOFFS, Starter, type StartManyItem, type StartManyResult, type StartOptions } from './runs/starter';
import { isFinished, type RunInfo, type RunStatus, type StartResult } from './domain/run-info';
import { isUuid } from './domain/uuid';
import { DEFAULT_REUSE, decideStart } from './domain/keys.policy';
import { isKeyConflict } from './store/runs.store';
import { assertValid, jsonProblem, nameProblem, uuidProblem } from './domain/validation';

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

/**
 * The facade users inject: starts runs and reads, cancels, retries and prunes them. Thin: it
 * validates, then calls the engine.
 */
@Injectable()
export class DurableService {
  constructor(
    private readonly core: DurableCore,
    private readonly starter: Starter,
    private readonly maintenance: Maintenance,
    private readonly flows: FlowsEngine,
    private readonly insights: KeyInsights,
    private readonly scheduler: Scheduler,
  ) {}

  /** Starts a run of `workflow` (see API.md for keys and `onDuplicate`). */
  start<TInput = unknown>(workflow: WorkflowRef, input?: TInput, options?: StartOptions): Promise<StartResult> {
    return this.starter.start(workflow, input, options);
  }

  /** Starts many runs in one round trip per batch; results in the order of `items`. */
  startMany(workflow: WorkflowRef, items: StartManyItem[], options?: { manager?: EntityManager }): Promise<StartManyResult[]> {
    return this.starter.startMany(workflow, items, options);
  }

  /** The run, or null. */
  async getRun(runId: string): Promise<RunInfo | null> {
    if (!isUuid(runId)) return null;
    const row = await this.core.runs.get(this.core.db, runId);
    return row ? this.core.info(row) : null; // with `children` (runs.get selects them)
  }

  /** Resolves once the run has finished; rejects with `TimeoutError` after `timeout`. */
  async waitForRun(runId: string, options: { timeout?: Duration } = {}): Promise<RunInfo> {
    const timeoutMs = options.timeout === undefined ? undefined : toMs(options.timeout, 'timeout');
    const until = timeoutMs === undefined ? Infinity : Date.now() + timeoutMs;
    for (;;) {
      const run = await this.getRun(runId);
      if (!run) throw new RunNotFoundError(runId);
      if (isFinished(run.status)) return run;
      if (Date.now() >= until) throw new TimeoutError(`run ${runId} did not finish within ${timeoutMs}ms`);
      await new Promise((r) => setTimeout(r, Math.min(WAIT_POLL_MS, Math.max(1, until - Date.now()))));
    }
  }

  /** Runs matching the filters, newest first; page with `cursor: lastRun.id`. */
  async listRuns(options: ListRunsOptions = {}): Promise<RunInfo[]> {
    const limit = Math.min(Math.max(1, Math.floor(options.limit ?? 50)), 1000);
    assertValid('listRuns', [uuidProblem(options.cursor, 'cursor'), uuidProblem(options.parentId, 'parentId')]);
    const status = options.status === undefined ? undefined : ([] as RunStatus[]).concat(options.status);
    const rows = await this.core.runs.list(this.core.db, {
      workflow: options.workflow === undefined ? undefined : this.core.registry.nameOf(options.workflow),
      key: options.key,
      status,
      flowId: options.flowId,
      parentId: options.parentId,
      waitingFor: options.waitingFor,
      cursor: options.cursor,
      limit,
    });
    return rows.map((r) => this.core.info(r));
  }

  /**
   * Cancels a run that is still going: it is `cancelled` at once, a running step sees `ctx.signal`
   * abort at the node's next heartbeat, and no later step starts. A finished run is left as it is.
   */
  async cancel(runId: string, options: { reason?: string } = {}): Promise<void> {
    const { runs, db } = this.core;
    const row = isUuid(runId) ? await runs.get(db, runId) : undefined;
    if (!row) throw new RunNotFoundError(runId);
    const reason = options.reason ?? null;
    const error = { name: 'CancelledError', code: 'cancelled', message: reason ?? 'cancelled' };
    // unfinished children are cancelled with it (trigger runs_cancel_children, same statement);
    // a deadlock with a child finishing at that moment is retried
    for (let attempt = 1; ; attempt++) {
      try {
        const ended = await runs.cancel(db, runId, reason, error);
        if (ended.ids.length === 0) break;
        emitRunFinished(row.workflow, 'cancelled'); // telemetry
        return countKeyHandoffs(this.core, db, ended.tx); // a run waiting behind it may have taken its key
      } catch (err) {
        if ((err as { code?: string }).code !== '40P01' || attempt >= 5) throw err;
      }
    }
    const now = await runs.get(db, runId);
    if (now?.status === 'compensating') throw new NotCancellableError(runId, now.status);
  }

  /**
   * Sends the event `name` to a run (see API.md / spec): `'delivered'` when it was waiting for it
   * (it resumes); `'kept'` when it is kept for a later `waitForEvent(name)` — with `buffer: true`,
   * or whenever a step of the run is running (it may be about to wait for it); else `'dropped'`.
   */
  async sendEvent(runId: string, name: string, payload?: unknown, options: { buffer?: boolean } = {}): Promise<SendEventOutcome> {
    return this.deliver(runId, name, payload, { buffer: options.buffer ?? false, kind: 'event' }, 'sendEvent');
  }

  /**
   * Provides the value a run waits for with `ctx.waitForInput(name)`: it resumes with it. Input
   * provided before the run waits is kept for it; a finished run ignores it.
   */
  async provideInput(runId: string, name: string, value?: unknown): Promise<void> {
    await this.deliver(runId, name, value, { buffer: true, kind: 'input' }, 'provideInput');
  }

  private async deliver(runId: string, name: string, payload: unknown, opts: { buffer: boolean; kind: 'event' | 'input' }, what: string) {
    assertValid(what, [nameProblem(name), jsonProblem(payload, 'payload')]);
    if (!isUuid(runId)) throw new RunNotFoundError(runId);
    const outcome = await this.core.db.tx((q) => deliverEvent(this.core, q, runId, name, payload, opts));
    if (!outcome) throw new RunNotFoundError(runId);
    return outcome;
  }

  /** Resumes a failed run at its failed step (taking its key back if a newer run let it go). */
  async retry(runId: string): Promise<void> {
    // a start may commit a holder of the free key between the holder check and the take: the
    // take is then refused (nothing written) and the decision is made again against that holder
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.retryOnce(runId);
      } catch (err) {
        if (!isKeyConflict(err)) throw err;
        if (attempt === MAX_HANDOFFS) throw new KeyContendedError();
      }
    }
  }

  private async retryOnce(runId: string): Promise<void> {
    const { runs, db, registry } = this.core;
    await db.tx(async (q) => {
      const row = isUuid(runId) ? await runs.get(q, runId, true) : undefined;
      if (!row) throw new RunNotFoundError(runId);
      if (row.status !== 'failed') throw new NotFailedError(runId, row.status);
      if (row.key !== null && !row.holds_key) {
        const holder = await runs.lockHolder(q, row.workflow, row.key);
        const reuse = registry.find(row.workflow)?.reuse ?? DEFAULT_REUSE;
        const decision = decideStart(reuse, 'error', holder && { status: holder.status, pickedUp: holder.picked_up });
        if (decision.action !== 'create') throw new KeyTakenError(holder!.id);
        if (holder) await runs.dropKey(q, holder.id);
        await runs.takeKey(q, runId);
        await this.core.activity.record(q, 'key_retaken', runId, row.workflow, row.key, { from: holder?.id ?? null });
      }
      await this.core.waits.resetForRetry(q, runId); // a timed-out wait or failed child is tried anew
      await runs.retry(q, runId);
    });
  }

  /** Starts a fresh copy of a finished run (same workflow and key; `input` replaces the input). */
  async rerun(runId: string, options: { input?: unknown } = {}): Promise<StartResult> {
    const row = isUuid(runId) ? await this.core.runs.get(this.core.db, runId) : undefined;
    if (!row) throw new RunNotFoundError(runId);
    if (!isFinished(row.status)) throw new NotFinishedError(runId);
    const input = 'input' in options ? options.input : row.input;
    const result = await this.starter.start(row.workflow, input, { key: row.key, onDuplicate: 'error' }, true);
    return result;
  }

  /**
   * Lets a finished run's key go (even under `reuse: 'never'`), so the item can be processed again
   * on purpose; the run keeps its history and its key value. `by` (who released it, 1–255 bytes) is
   * recorded in the `key_released` event (null when not given).
   */
  async releaseKey(runId: string, options?: { by?: string }): Promise<void> {
    const by = options?.by;
    assertValid('releaseKey', [by === undefined ? undefined : nameProblem(by, 'by')]);
    const { runs, db, activity } = this.core;
    const workflow = await db.tx(async (q) => {
      const row = isUuid(runId) ? await runs.get(q, runId, true) : undefined;
      if (!row) throw new RunNotFoundError(runId);
      if (!isFinished(row.status)) throw new NotFinishedError(runId);
      if (!row.holds_key) throw new NoKeyError(runId);
      await runs.dropKey(q, runId);
      await activity.record(q, 'key_released', runId, row.workflow, row.key, { by: by ?? null });
      return row.workflow;
    });
    emitKeyMetric('key_released', workflow); // telemetry, once the release committed
  }

  /** Activity events (key duplicates, hand-offs, releases, retakes), newest first (by the time recorded, then id). */
  listActivity(options?: ListActivityOptions): Promise<ActivityEvent[]> {
    return this.insights.listActivity(options);
  }

  /** Keys of a workflow with their holder, runs per key and re-adds in the last day. */
  listKeys(options: { workflow: WorkflowRef; search?: string; limit?: number; cursor?: string }): Promise<KeyInfo[]> {
    return this.insights.listKeys(options);
  }

  /** Key statistics of a workflow. */
  keyStats(options: { workflow: WorkflowRef }): Promise<KeyStats> {
    return this.insights.keyStats(options);
  }

  /**
   * A builder for a DAG flow (`{ id?, name?, ignoreCancelled?, ignoreFailed?, ignoreDeleted? }`):
   * chain `.add(name, workflow, input, { deps })`, then `startFlow`.
   */
  flow(options: FlowOptions = {}): FlowBuilder {
    return this.flows.flow(options);
  }

  /**
   * Inserts every node of the flow in one transaction (or the caller's `manager`'s); a node
   * becomes claimable once all its deps completed. A bad graph → `DurableValidationError`, a
   * custom id already used → `FlowExistsError` (a `DurableValidationError`), nothing written.
   */
  startFlow(flow: FlowBuilder, options: { manager?: EntityManager } = {}): Promise<StartFlowResult> {
    return this.flows.start(flow, options);
  }

  /** A builder bound to flow `flowId` (`RunNotFoundError` if there is none); `startFlow` on it appends. */
  appendFlow(flowId: string, options: AppendFlowOptions = {}): Promise<FlowBuilder> {
    return this.flows.append(flowId, options);
  }

  /** The graph of a started flow with each node's run id and status (`toMermaid()`, `toDot()`). */
  getFlowGraph(flowId: string): Promise<FlowGraph> {
    return this.flows.graph(flowId);
  }

  /** Deletes finished runs (and activity) older than `olderThan` (default: the retention options). */
  async prune(options: { olderThan?: Duration } = {}): Promise<{ runs: number; activity: number }> {
    const ms = options.olderThan === undefined ? undefined : toMs(options.olderThan, 'olderThan');
    return this.maintenance.prune(this.core.db, ms);
  }

  /**
   * Stores (or replaces) the cron schedule `options.name` (default: the workflow's name) of
   * `workflow`; every node ticks it, each tick fires once across the cluster. Invalid cron or time
   * zone → `DurableValidationError`.
   */
  schedule(workflow: WorkflowRef, cron: string, options?: ScheduleOptions): Promise<ScheduleInfo> {
    return this.scheduler.schedule(workflow, cron, options);
  }

  /** Deletes a schedule on every node; false when there was none. */
  unschedule(name: string): Promise<boolean> {
    return this.scheduler.unschedule(name);
  }

  /** Fires a schedule now, with its key and input (`ScheduleNotFoundError` for an unknown name). */
  triggerSchedule(name: string): Promise<StartResult> {
    return this.scheduler.trigger(name);
  }

  /** Every stored schedule, by name. */
  listSchedules(): Promise<ScheduleInfo[]> {
    return this.scheduler.list();
  }
}
