import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { DiscoveryService, ModuleRef } from '@nestjs/core';
import type { ScheduleOptions } from '../definition/schedule.decorator';
import { WorkflowRegistry } from '../definition/workflow.registry';
import type { WorkflowRef } from '../definition/workflow-metadata';
import type { CallerTx } from '../store/caller-tx';
import { SchedulesStore, type ScheduleCopy } from '../store/schedules.store';
import { DurableConnection } from '../core/durable.connection';
import { LOG_CONTEXT, RESOLVED_OPTIONS } from '../core/durable.constants';
import type { ResolvedOptions } from '../options/resolve-options';
import { monotonicMs } from '../domain/monotonic-clock';
import { unstorableName } from '../domain/call-options';
import type { StartResult } from '../domain/run-info';
import { Starter } from '../runs/starter';
import { cronJobsOf } from './cron-jobs';
import { ScheduleJobs } from './schedule-jobs';
import { REMOVALS_KEPT_MS, ScheduleChangesReader } from './schedule-changes';
import { checkDeclaredSchedules, declaredSchedule, decoratedSchedules } from './schedule-declarations';
import { ScheduleFires, type FireResult, type TickStats } from './schedule-fires';
import { scheduleInfoOf, type ScheduleInfo } from './schedule-info';

/** Fire records deleted per prune statement. */
const PRUNE_BATCH = 5_000;
/** How often a node prunes old fire records. */
const PRUNE_EVERY_MS = 60_000;

/**
 * Cron schedules. Every node that has the workflow ticks on its own `CronJob` (in Nest's
 * `SchedulerRegistry` when the app imports `ScheduleModule`, else in a registry of its own); a tick
 * fires only on the node that wins the database guard of (schedule, tick) — see
 * `SchedulesStore.claimTick` — and starts the run in the same transaction ({@link ScheduleFires}).
 * Schedules are rows, so they survive restarts; every node reads them all at its startup, then with
 * its heartbeat reads those changed since its last read (`SchedulesStore.changes`) to follow
 * `schedule` and `unschedule` calls made elsewhere.
 */
@Injectable()
export class Scheduler implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(LOG_CONTEXT);
  /** This node's cron jobs, in Nest's SchedulerRegistry or the module's own (looked up when first needed). */
  private readonly jobs: ScheduleJobs;
  private readonly fires: ScheduleFires;
  private readonly inFlight = new Set<Promise<unknown>>();
  private readonly changes: ScheduleChangesReader;
  private syncTimer?: NodeJS.Timeout;
  private syncing?: Promise<void>;
  private stopped = false;
  /** When the schedules' fire records were last pruned, on {@link monotonicMs} (a clock stepped back puts the next prune off by nothing). */
  private lastPruneAt = -Infinity;

  constructor(
    @Inject(RESOLVED_OPTIONS) private readonly options: ResolvedOptions,
    private readonly connection: DurableConnection,
    private readonly registry: WorkflowRegistry,
    readonly store: SchedulesStore,
    starter: Starter,
    moduleRef: ModuleRef,
    discovery: DiscoveryService,
  ) {
    this.jobs = new ScheduleJobs(
      () => cronJobsOf(moduleRef),
      (local, tick, next) => this.track(this.fireTick(local, tick, next)),
      this.logger,
    );
    this.fires = new ScheduleFires(connection, store, starter, options.nodeId, this.logger);
    this.changes = new ScheduleChangesReader(store);
    checkDeclaredSchedules(discovery);
  }

  /** Per schedule: ticks this node saw and what came of them (tests, debugging). */
  get stats(): Map<string, TickStats> {
    return this.fires.stats;
  }

  /**
   * Stops this node's schedules from ticking on the wall clock, now and for every schedule mounted
   * later; they still fire through `triggerSchedule`. The testing kit calls it before the app
   * starts: an env's schedules fire when its time is skipped past a tick, never by the real clock.
   */
  holdTicks(): void {
    this.jobs.hold();
  }

  async onApplicationBootstrap(): Promise<void> {
    // a node without workflows (the CLI, an app that only starts runs) has no schedule to store,
    // tick or prune after: it writes nothing (a read-only connection, a replica, serves it)
    if (this.registry.names().length === 0) return;
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

  /** Validates and stores every `@Schedule` of the registered workflows, and drops those no longer declared (startup). */
  private async storeDecorated(): Promise<void> {
    const { db } = this.connection;
    const rows = decoratedSchedules(this.registry);
    for (const row of rows) await this.store.upsert(db, { ...row, source: 'decorator' });
    const dropped = await this.store.dropStaleDecorated(
      db,
      this.registry.names(),
      rows.map((r) => r.name),
    );
    if (dropped.length) this.logger.log(`removed schedule(s) no longer declared with @Schedule: ${dropped.join(', ')}`);
  }

  /** `DurableService.schedule`: stores (or replaces) a schedule and starts ticking it here. */
  async schedule(ref: WorkflowRef, cron: string, options: ScheduleOptions = {}): Promise<ScheduleInfo> {
    const def = this.registry.get(ref);
    const row = await this.store.upsert(this.connection.db, { ...declaredSchedule(`schedule ${def.name}`, def.name, cron, options ?? {}), source: 'api' });
    await this.synced();
    this.mount(row);
    return scheduleInfoOf(row);
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

  /** `DurableService.triggerSchedule`: fires now (see {@link ScheduleFires.trigger}; `tx` is internal). */
  trigger(name: string, tx?: CallerTx): Promise<StartResult> {
    return this.fires.trigger(name, tx);
  }

  /** Names of the schedules this node ticks. */
  mounted(): string[] {
    return this.jobs.names();
  }

  /** Every stored schedule by name; with `page`, at most `limit` of them (of `workflow`) named after `after`. */
  async list(page?: { after?: string; workflow?: string; limit: number }): Promise<ScheduleInfo[]> {
    const { db } = this.connection;
    const rows = page ? await this.store.page(db, page.after ?? null, page.workflow ?? null, page.limit) : await this.store.all(db);
    return rows.map(scheduleInfoOf);
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

  /** One tick on this node (see {@link ScheduleFires.tick}); every job's tick goes through here. */
  fireTick(local: ScheduleCopy, at: Date, next: Date | null): Promise<FireResult> {
    return this.fires.tick(local, at, next);
  }
}
