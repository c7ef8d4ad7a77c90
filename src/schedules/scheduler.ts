import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { DiscoveryService, ModuleRef } from '@nestjs/core';
import { CronTime } from 'cron';
import type { EntityManager } from 'typeorm';
import { KeyTakenError, ScheduleNotFoundError } from '../errors';
import { SCHEDULE_OPTION_NAMES, type ScheduleMetadata, type ScheduleOptions } from '../definition/schedule.decorator';
import { schedulesMetadataOf, workflowNameOf } from '../definition/workflow-metadata';
import { WorkflowRegistry } from '../definition/workflow.registry';
import type { WorkflowRef } from '../definition/workflow-metadata';
import { managerQueryable, type Queryable } from '../store/db';
import type { CallerTx } from '../store/caller-tx';
import { SchedulesStore, type ClaimedTick, type ScheduleCopy, type ScheduleRow } from '../store/schedules.store';
import { DurableConnection } from '../core/durable.connection';
import { LOG_CONTEXT, RESOLVED_OPTIONS } from '../core/durable.constants';
import type { ResolvedOptions } from '../options/resolve-options';
import { serializeError } from '../domain/serialize-error';
import { monotonicMs } from '../domain/monotonic-clock';
import { assertValid, jsonProblem, keyProblem, nameProblem, optionsObjectProblem, problem, unknownOptionProblems } from '../domain/validation';
import { unstorableName } from '../domain/call-options';
import type { StartResult } from '../domain/run-info';
import { Starter } from '../runs/starter';
import { nextOf, parseCron, tickAt } from './cron';
import { cronJobsOf } from './cron-jobs';
import { ScheduleJobs } from './schedule-jobs';
import { REMOVALS_KEPT_MS, ScheduleChangesReader } from './schedule-changes';

/** A stored schedule as `listSchedules` returns it. */
export interface ScheduleInfo {
  name: string;
  workflow: string;
  cron: string;
  timezone: string;
  key: string | null;
  input: unknown;
  /** `'decorator'`: from `@Schedule` (re-stored at every startup); `'api'`: from `DurableService.schedule`. */
  source: 'decorator' | 'api';
  /** The next tick after now. */
  nextFireAt: Date | null;
  /** The last tick that fired (on any node). */
  lastTickAt: Date | null;
  /** When it last fired (tick or `triggerSchedule`). */
  lastFireAt: Date | null;
  lastRunId: string | null;
  /** `StartResult.outcome` of the last fire, `'skipped'` (key held, `onDuplicate: 'error'`) or `'failed'`. */
  lastOutcome: string | null;
  /** Fires that started or found a run (skips included). */
  fires: number;
  /** Fires whose start failed for another reason than a held key. */
  failures: number;
  createdAt: Date;
  updatedAt: Date;
}

/** What a fire did. */
export interface FireResult {
  /** false: another node fired this tick, or the tick is older than the last one fired. */
  fired: boolean;
  runId?: string | null;
  outcome?: string;
}

/** Longest schedule name. */
const MAX_NAME = 200;
/** Fire records deleted per prune statement. */
const PRUNE_BATCH = 5_000;
/** How often a node prunes old fire records. */
const PRUNE_EVERY_MS = 60_000;
/**
 * A fire's transaction (tick or trigger), whatever the database's default: a tick that waited on
 * the schedule's row re-reads it once the row is free (taken by another node, or stored again
 * unchanged) where REPEATABLE READ or SERIALIZABLE would fail it, and the tick would be lost.
 */
const FIRE_ISOLATION = 'READ COMMITTED';

/**
 * Cron schedules. Every node that has the workflow ticks on its own `CronJob` (in Nest's
 * `SchedulerRegistry` when the app imports `ScheduleModule`, else in a registry of its own); a tick
 * fires only on the node that wins the database guard of (schedule, tick) — see
 * `SchedulesStore.claimTick` — and starts the run in the same transaction. Schedules are rows, so
 * they survive restarts; every node reads them all at its startup, then with its heartbeat reads
 * those changed since its last read (`SchedulesStore.changes`) to follow `schedule` and
 * `unschedule` calls made elsewhere.
 */
@Injectable()
export class Scheduler implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(LOG_CONTEXT);
  /** This node's cron jobs, in Nest's SchedulerRegistry or the module's own (looked up when first needed). */
  private readonly jobs: ScheduleJobs;
  private readonly inFlight = new Set<Promise<unknown>>();
  private readonly changes: ScheduleChangesReader;
  private syncTimer?: NodeJS.Timeout;
  private syncing?: Promise<void>;
  private stopped = false;
  /** When the schedules' fire records were last pruned, on {@link monotonicMs} (a clock stepped back puts the next prune off by nothing). */
  private lastPruneAt = -Infinity;
  /** Per schedule: ticks this node saw and what came of them (tests, debugging). */
  readonly stats = new Map<string, { ticks: number; fired: number; lost: number; failed: number }>();

  constructor(
    @Inject(RESOLVED_OPTIONS) private readonly options: ResolvedOptions,
    private readonly connection: DurableConnection,
    private readonly registry: WorkflowRegistry,
    readonly store: SchedulesStore,
    private readonly starter: Starter,
    moduleRef: ModuleRef,
    discovery: DiscoveryService,
  ) {
    this.jobs = new ScheduleJobs(
      () => cronJobsOf(moduleRef),
      (local, tick, next) => this.track(this.fireTick(local, tick, next)),
      this.logger,
    );
    this.changes = new ScheduleChangesReader(store);
    this.checkDeclared(discovery);
  }

  /**
   * Stops this node's schedules from ticking on the wall clock, now and for every schedule mounted
   * later; they still fire through `triggerSchedule`. The testing kit calls it before the app
   * starts: an env's schedules fire when its time is skipped past a tick, never by the real clock.
   */
  holdTicks(): void {
    this.jobs.hold();
  }

  /**
   * Validates every `@Schedule` of the app's providers while the app is being built, before any
   * lifecycle hook runs (so a bad cron fails the startup with nothing started yet).
   */
  private checkDeclared(discovery: DiscoveryService): void {
    for (const wrapper of discovery.getProviders()) {
      const type = wrapper.metatype;
      if (!type || typeof type !== 'function') continue;
      const metas = schedulesMetadataOf(type);
      if (!metas.length) continue;
      const workflow = workflowNameOf(type);
      for (const m of metas) this.validate(`@Schedule('${m.cron}') on workflow "${workflow}"`, workflow, m.cron, m.options ?? {}, m.options?.name ?? workflow);
    }
  }

  async onApplicationBootstrap(): Promise<void> {
    await this.storeDecorated();
    await this.sync();
    const every = Math.max(200, Math.min(this.options.heartbeatMs, 5_000));
    this.syncTimer = setInterval(() => void this.sync().catch((err) => this.logger.warn(`schedule sync failed: ${(err as Error).message}`)), every);
    this.syncTimer.unref?.();
  }

  async onModuleDestroy(): Promise<void> {
    this.stopped = true;
    if (this.syncTimer) clearInterval(this.syncTimer);
    for (const name of this.jobs.names()) this.jobs.unmount(name);
    await this.syncing?.catch(() => undefined);
    await Promise.allSettled([...this.inFlight]);
  }

  /** Validates and stores every `@Schedule` of the registered workflows (startup). */
  private async storeDecorated(): Promise<void> {
    const { registry } = this;
    const { db } = this.connection;
    const found: { workflow: string; meta: ScheduleMetadata; name: string }[] = [];
    for (const workflow of registry.names()) {
      const def = registry.find(workflow)!;
      const metas = schedulesMetadataOf(def.type);
      for (const meta of metas) found.push({ workflow, meta, name: meta.options?.name ?? workflow });
    }
    const names = new Set<string>();
    for (const f of found) {
      if (names.has(f.name)) {
        assertValid(`@Schedule on workflow "${f.workflow}"`, [
          problem('name', f.name, 'unique', `two schedules are named "${f.name}"; give each @Schedule a distinct name`),
        ]);
      }
      names.add(f.name);
    }
    const rows = found.map((f) =>
      this.validate(`@Schedule('${f.meta.cron}') on workflow "${f.workflow}"`, f.workflow, f.meta.cron, f.meta.options ?? {}, f.name),
    );
    for (const row of rows) await this.store.upsert(db, { ...row, source: 'decorator' });
    const dropped = await this.store.dropStaleDecorated(db, registry.names(), [...names]);
    if (dropped.length) this.logger.log(`removed schedule(s) no longer declared with @Schedule: ${dropped.join(', ')}`);
  }

  private validate(what: string, workflow: string, cron: unknown, options: ScheduleOptions, name = options.name ?? workflow) {
    // a value where the options go (a name) would otherwise be ignored: the workflow's own schedule replaced
    assertValid(what, [optionsObjectProblem(options, 'options', SCHEDULE_OPTION_NAMES)]);
    const time = parseCron(what, cron, options.timezone);
    const problems = [...unknownOptionProblems(options, SCHEDULE_OPTION_NAMES), keyProblem(options.key, 'key'), jsonProblem(options.input, 'input')];
    const badName = nameProblem(name);
    if (badName) problems.push(badName);
    else if (name.length > MAX_NAME) problems.push(problem('name', name, 'isName', `name must be a string of 1 to ${MAX_NAME} characters`));
    assertValid(what, problems);
    return {
      name,
      workflow,
      cron: cron as string,
      timezone: options.timezone ?? 'UTC',
      key: options.key ?? null,
      input: options.input ?? null,
      next_fire_at: nextOf(time)?.toISOString() ?? null,
    };
  }

  /** `DurableService.schedule`: stores (or replaces) a schedule and starts ticking it here. */
  async schedule(ref: WorkflowRef, cron: string, options: ScheduleOptions = {}): Promise<ScheduleInfo> {
    const def = this.registry.get(ref);
    const row = await this.store.upsert(this.connection.db, { ...this.validate(`schedule ${def.name}`, def.name, cron, options ?? {}), source: 'api' });
    await this.synced();
    this.mount(row);
    return this.info(row);
  }

  /**
   * `DurableService.unschedule`: deletes the schedule everywhere; false when there was none (also
   * for a name no schedule can have: not a string, or with a NUL or a lone surrogate).
   */
  async unschedule(name: string): Promise<boolean> {
    if (unstorableName(name)) return false;
    const removed = await this.store.remove(this.connection.db, name);
    await this.synced();
    this.jobs.unmount(name);
    return removed;
  }

  /** Waits for a sync under way, which may have read the rows before a change this node just made (it would mount what it read). */
  private async synced(): Promise<void> {
    await this.syncing?.catch(() => undefined);
  }

  /**
   * `DurableService.triggerSchedule`: fires now, with the schedule's key and input (so a held key
   * follows the workflow's `onDuplicate`; with `'error'` it rejects with `KeyTakenError`).
   * `ScheduleNotFoundError` when there is none, or for a name no schedule can have. `tx` (internal): a caller's
   * READ COMMITTED transaction to fire in; a skip's `KeyTakenError` is then thrown before it ends (its rollback undoes the skip's record).
   */
  async trigger(name: string, tx?: CallerTx): Promise<StartResult> {
    if (unstorableName(name)) throw new ScheduleNotFoundError(String(name));
    const fire = async (q: Queryable, manager?: EntityManager) => {
      // as in a tick: a node that stops in the middle of the trigger does not hold the row for good
      await this.store.fireSession(q);
      // the row first, as a tick takes it: a tick that starts under the same key waits, never deadlocks
      const row = await this.store.lockForFire(q, name);
      if (!row) throw new ScheduleNotFoundError(name);
      const out = await this.startFor(row, manager, tx);
      await this.store.recordFire(q, name, null, out.runId, out.outcome);
      return out;
    };
    const result = await (tx ? fire(tx.q) : this.fireTransaction((manager) => fire(managerQueryable(manager), manager)));
    if (result.taken) throw result.taken;
    return { runId: result.runId!, outcome: result.outcome as StartResult['outcome'] };
  }

  /** Names of the schedules this node ticks. */
  mounted(): string[] {
    return this.jobs.names();
  }

  /** Every stored schedule by name; with `page`, at most `limit` of them (of `workflow`) named after `after`. */
  async list(page?: { after?: string; workflow?: string; limit: number }): Promise<ScheduleInfo[]> {
    const { db } = this.connection;
    const rows = page ? await this.store.page(db, page.after ?? null, page.workflow ?? null, page.limit) : await this.store.all(db);
    return rows.map((r) => this.info(r));
  }

  private info(r: ScheduleRow): ScheduleInfo {
    let next: Date | null;
    try {
      next = nextOf(new CronTime(r.cron, r.timezone));
    } catch {
      next = r.next_fire_at;
    }
    return {
      name: r.name,
      workflow: r.workflow,
      cron: r.cron,
      timezone: r.timezone,
      key: r.key,
      input: r.input,
      source: r.source,
      nextFireAt: next,
      lastTickAt: r.last_tick_at,
      lastFireAt: r.last_fire_at,
      lastRunId: r.last_run_id,
      lastOutcome: r.last_outcome,
      fires: r.fires,
      failures: r.failures,
      createdAt: r.created_at,
      updatedAt: r.updated_at,
    };
  }

  /** Brings this node's cron jobs in line with the stored schedules (and prunes old fire records). */
  sync(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    if (!this.syncing) {
      this.syncing = this.syncOnce().finally(() => {
        this.syncing = undefined;
      });
    }
    return this.syncing;
  }

  /** Mounts or unmounts the schedules changed since this node's last read (see {@link ScheduleChangesReader}). */
  private async syncOnce(): Promise<void> {
    const { db } = this.connection;
    const read = await this.changes.read(db);
    if (this.stopped) return;
    const stored = new Set<string>();
    for (const row of read.rows) {
      stored.add(row.name);
      this.mount(row);
    }
    for (const name of read.gone === 'all' ? this.jobs.names() : read.gone) if (!stored.has(name)) this.jobs.unmount(name);
    read.done();
    const every = Math.min(PRUNE_EVERY_MS, this.options.retention.activityMs);
    if (monotonicMs() - this.lastPruneAt >= every) {
      this.lastPruneAt = monotonicMs();
      for (let n = PRUNE_BATCH; n === PRUNE_BATCH;) n = await this.store.prune(db, this.options.retention.activityMs, PRUNE_BATCH);
      await this.store.pruneRemovals(db, REMOVALS_KEPT_MS);
    }
  }

  /** Ticks `row` on this node when it has the row's workflow (another node ticks it otherwise). */
  private mount(row: ScheduleCopy): void {
    if (this.stopped) return;
    if (this.registry.find(row.workflow)) this.jobs.mount(row);
    else this.jobs.unmount(row.name);
  }

  private track<T>(p: Promise<T>): void {
    this.inFlight.add(p);
    void p.finally(() => this.inFlight.delete(p));
  }

  private stat(name: string) {
    let s = this.stats.get(name);
    if (!s) this.stats.set(name, (s = { ticks: 0, fired: 0, lost: 0, failed: 0 }));
    return s;
  }

  /** One tick on this node: take the (schedule, tick) guard and start the run, or find it taken. */
  async fireTick(local: ScheduleCopy, at: Date, next: Date | null): Promise<FireResult> {
    const stat = this.stat(local.name);
    try {
      const tick = tickAt(local.cron, local.timezone, at);
      if (!tick) return { fired: false }; // an instant the cron library named in a repeated hour, of no tick
      const out = await this.fireTransaction(async (manager) => {
        const q = managerQueryable(manager);
        await this.store.fireSession(q);
        const claimed = await this.store.claimTick(q, local, tick, this.options.nodeId, next);
        if (!claimed) return undefined;
        const started = await this.startFor(claimed, manager);
        await this.store.recordFire(q, local.name, tick, started.runId, started.outcome);
        return started;
      });
      if (!out) {
        stat.lost++;
        return { fired: false };
      }
      stat.fired++;
      return { fired: true, runId: out.runId, outcome: out.outcome };
    } catch (err) {
      // Nothing of this tick was written (its transaction rolled back): another node may still fire it.
      stat.failed++;
      this.logger.warn(`schedule "${local.name}" tick ${at.toISOString()} failed: ${(err as Error).message}`);
      await this.store.recordFailure(this.connection.db, local.name, serializeError(err)).catch(() => undefined);
      return { fired: false, outcome: 'failed' };
    } finally {
      stat.ticks++;
    }
  }

  /**
   * Runs a fire (tick or trigger) in a transaction of its own, on a connection of its own: never in
   * one the app keeps in an async context (with `typeorm-transactional` the DataSource's `manager` is
   * the running `@Transactional()` method's, and the fire would join it as a savepoint: its isolation
   * level ignored, its idle timeout left on the caller's transaction, the schedule's row locked and
   * its run uncommitted until the caller ends).
   */
  private async fireTransaction<T>(fn: (manager: EntityManager) => Promise<T>): Promise<T> {
    const runner = this.connection.dataSource.createQueryRunner();
    try {
      return await runner.manager.transaction(FIRE_ISOLATION, fn);
    } finally {
      await runner.release();
    }
  }

  /** Starts the schedule's run inside the fire's transaction (`manager`'s, or `tx`); a held key under `onDuplicate: 'error'` is a skip. */
  private async startFor(s: ClaimedTick, manager?: EntityManager, tx?: CallerTx): Promise<{ runId: string | null; outcome: string; taken?: KeyTakenError }> {
    try {
      const r = await this.starter.start(s.workflow, s.input ?? undefined, { key: s.key, manager }, { tx });
      return { runId: r.runId, outcome: r.outcome };
    } catch (err) {
      if (err instanceof KeyTakenError) return { runId: err.holderId, outcome: 'skipped', taken: err };
      throw err;
    }
  }
}
