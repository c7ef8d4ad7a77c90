import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import type { Duration } from './domain/duration';
import type { StartExplanation } from './domain/keys.explain';
import type { OnDuplicate } from './domain/keys.policy';
import type { RunInfo, StartResult } from './domain/run-info';
import type { ScheduleOptions } from './definition/schedule.decorator';
import type { WorkflowRef } from './definition/workflow-metadata';
import type { FlowBuilder, FlowOptions } from './flows/flow.builder';
import type { FlowGraph } from './flows/flow.graph';
import { FlowsEngine, type AppendFlowOptions, type StartFlowResult } from './flows/flows.engine';
import type { RerunFlowOptions } from './flows/flow.rerun';
import type { SendEventOutcome } from './runs/event-delivery';
import { ClusterReader, type NodeInfo, type WorkflowInfo } from './runs/cluster-reader';
import { QueueControls } from './runs/queue-controls';
import {
  KeyInsights,
  type ActivityEvent,
  type KeyInfo,
  type KeysPage,
  type KeyStats,
  type ListActivityOptions,
  type ListKeysOptions,
} from './runs/key-insights';
import { RunAdmin } from './runs/run-admin';
import { RunEvents } from './runs/run-events';
import { RunReader, type CountRunsFilter, type ListRunsOptions, type StepAttempt } from './runs/run-reader';
import { Starter } from './runs/starter';
import type { FreedKeyWorkflowRef, NeverFreedStartOptions, StartManyItem, StartManyResult, StartOptions } from './runs/start-options';
import { Scheduler } from './schedules/scheduler';
import type { ScheduleInfo } from './schedules/schedule-info';
import { Maintenance } from './worker/maintenance';

/**
 * The facade users inject: starts runs and reads, cancels, retries and prunes them. Thin: every
 * method delegates to the part of the module that does it.
 */
@Injectable()
export class DurableService {
  constructor(
    private readonly starter: Starter,
    private readonly reader: RunReader,
    private readonly admin: RunAdmin,
    private readonly events: RunEvents,
    private readonly insights: KeyInsights,
    private readonly flows: FlowsEngine,
    private readonly scheduler: Scheduler,
    private readonly maintenance: Maintenance,
    private readonly cluster: ClusterReader,
    private readonly controls: QueueControls,
  ) {}

  /**
   * Starts a run of `workflow` (see docs/keys.md for keys and `onDuplicate`). A workflow class that
   * extends `DurableWorkflow(…, { reuse: 'never' })` does not take `onDuplicate: 'runAgain'` here
   * (a compile error; refused with `DurableValidationError` when the types are bypassed).
   */
  start<TInput = unknown>(workflow: FreedKeyWorkflowRef, input?: TInput, options?: StartOptions): Promise<StartResult>;
  start<TInput = unknown>(workflow: WorkflowRef, input?: TInput, options?: NeverFreedStartOptions): Promise<StartResult>;
  start(workflow: WorkflowRef, input?: unknown, options?: StartOptions): Promise<StartResult> {
    return this.starter.start(workflow, input, options);
  }

  /** Starts many runs in one round trip per batch; results in the order of `items`. */
  startMany(workflow: WorkflowRef, items: StartManyItem[], options?: { manager?: EntityManager }): Promise<StartManyResult[]> {
    return this.starter.startMany(workflow, items, options);
  }

  /** The run, or null. */
  getRun(runId: string): Promise<RunInfo | null> {
    return this.reader.get(runId);
  }

  /** Resolves once the run has finished; rejects with `TimeoutError` after `timeout`. */
  waitForRun(runId: string, options?: { timeout?: Duration }): Promise<RunInfo> {
    return this.reader.waitFor(runId, options);
  }

  /**
   * Runs matching the filters, newest first; the next page with `before: lastRun.id` (or
   * `cursor`), the previous one with `after: firstRun.id`.
   */
  listRuns(options?: ListRunsOptions): Promise<RunInfo[]> {
    return this.reader.list(options);
  }

  /** How many runs match, counting at most `cap` (default 10 000) from an index: `capped` when there are more. */
  countRuns(filter?: CountRunsFilter, options?: { cap?: number }): Promise<{ count: number; capped: boolean }> {
    return this.reader.count(filter, options);
  }

  /** Every attempt of every step of a run, in the order they ended (`RunNotFoundError` if there is no such run). */
  getRunHistory(runId: string): Promise<StepAttempt[]> {
    return this.reader.historyOf(runId);
  }

  /** The workflows registered on this node, with their options, steps and runs per status (bounded counts). */
  listWorkflows(): Promise<WorkflowInfo[]> {
    return this.cluster.workflows();
  }

  /**
   * Pauses a workflow on every node: its runs are not claimed (pending ones wait, running steps
   * finish) until {@link resume}. Shown by `listWorkflows` as `paused`.
   */
  pause(workflow: WorkflowRef): Promise<void> {
    return this.controls.pause(workflow);
  }

  /** Resumes a paused workflow: its due runs are claimed again at once. */
  resume(workflow: WorkflowRef): Promise<void> {
    return this.controls.resume(workflow);
  }

  /** The nodes that heartbeat into this schema: alive or not, their running runs and slots. */
  listNodes(): Promise<NodeInfo[]> {
    return this.cluster.nodeList();
  }

  /**
   * Cancels a run that is still going: it is `cancelled` at once, a running step sees `ctx.signal`
   * abort at the node's next heartbeat, and no later step starts. A finished run is left as it is.
   */
  cancel(runId: string, options?: { reason?: string }): Promise<void> {
    return this.admin.cancel(runId, options);
  }

  /**
   * Sends the event `name` to a run: `'delivered'` when it was waiting for it (it resumes); `'kept'`
   * when it is kept for a later `waitForEvent(name)` — with `buffer: true` (or when the running
   * step has just reached that wait and is suspending on it); else `'dropped'`.
   */
  sendEvent(runId: string, name: string, payload?: unknown, options?: { buffer?: boolean }): Promise<SendEventOutcome> {
    return this.events.send(runId, name, payload, options);
  }

  /**
   * Provides the value a run waits for with `ctx.waitForInput(name)`: it resumes with it. Input
   * provided before the run waits is kept for it; a finished run ignores it.
   */
  async provideInput(runId: string, name: string, value?: unknown): Promise<void> {
    await this.events.provideInput(runId, name, value);
  }

  /** Resumes a failed run at its failed step (taking its key back if a newer run let it go). */
  retry(runId: string): Promise<void> {
    return this.admin.retry(runId);
  }

  /** Starts a fresh copy of a finished run (same workflow and key; `input` replaces the input). */
  rerun(runId: string, options?: { input?: unknown }): Promise<StartResult> {
    return this.admin.rerun(runId, options);
  }

  /**
   * Lets a finished run's key go (even under `reuse: 'never'`), so the item can be processed again
   * on purpose; the run keeps its history and its key value. `by` (who released it, 1–255 bytes) is
   * recorded in the `key_released` event (null when not given).
   */
  releaseKey(runId: string, options?: { by?: string }): Promise<void> {
    return this.admin.releaseKey(runId, options);
  }

  /** Activity events (key duplicates, hand-offs, releases, retakes), newest first (by the time recorded, then id). */
  listActivity(options?: ListActivityOptions): Promise<ActivityEvent[]> {
    return this.insights.listActivity(options);
  }

  /**
   * Keys with their holder, runs per key and re-adds in the last day: of a workflow by key, or of
   * every workflow newest first; page with `cursor: last.cursor`.
   */
  listKeys(options: ListKeysOptions = {}): Promise<KeyInfo[]> {
    return this.insights.listKeys(options);
  }

  /**
   * `listKeys` with `next`, the cursor of the next page (null when no more keys were found): across
   * workflows a page can hold fewer keys than `limit`, or none, with older keys beyond it.
   */
  listKeysPage(options: ListKeysOptions = {}): Promise<KeysPage> {
    return this.insights.keysPage(options, 'listKeysPage');
  }

  /**
   * What `start(workflow, input, { key, onDuplicate })` would do now and why — the holder, its
   * status and the key rule that applied — writing nothing. A start made later may find another holder.
   */
  explainStart(workflow: WorkflowRef, input: unknown, options: { key: string; onDuplicate?: OnDuplicate }): Promise<StartExplanation> {
    return this.insights.explainStart(workflow, input, options);
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

  /**
   * Runs node `from` of flow `flowId` and everything downstream of it again, as fresh runs that wait
   * for their deps as in a new flow; the other nodes' recorded results are kept. Every node rerun
   * must have finished (`NotFinishedError`); an unknown node is a `DurableValidationError`.
   */
  rerunFlow(flowId: string, options: RerunFlowOptions): Promise<StartFlowResult> {
    return this.flows.rerun(flowId, options);
  }

  /** The graph of a started flow with each node's run id and status (`toMermaid()`, `toDot()`). */
  getFlowGraph(flowId: string): Promise<FlowGraph> {
    return this.flows.graph(flowId);
  }

  /** Deletes finished runs older than `olderThan` (default: `retention.runs`) and activity older than `retention.activity`. */
  prune(options?: { olderThan?: Duration }): Promise<{ runs: number; activity: number }> {
    return this.maintenance.pruneNow(options);
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
