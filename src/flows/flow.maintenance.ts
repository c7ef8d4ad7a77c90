import { BeforeApplicationShutdown, Inject, Injectable, Logger } from '@nestjs/common';
import { WorkflowRegistry } from '../definition/workflow.registry';
import { DurableConnection } from '../core/durable.connection';
import { LOG_CONTEXT, RESOLVED_OPTIONS } from '../core/durable.constants';
import type { ResolvedOptions } from '../options/resolve-options';
import { sqlState, type Queryable } from '../store/db';
import { FlowsStore } from '../store/flows.store';
import type { FlowPruneCursor } from '../store/flows.types';
import { HooksStore, type HookRow } from '../store/hooks.store';
import { toRunInfo } from '../store/run-row';
import { RunsStore } from '../store/runs.store';
import { lifecycleHooksOf } from '../definition/run-lifecycle.interface';
import { backoffDelay, DEFAULT_RETRY, type ResolvedRetry } from '../domain/retry.policy';
import { monotonicMs } from '../domain/monotonic-clock';
import { emitRunFinished } from '../observe/telemetry';
import type { FlowCancelReason } from './on-flow-cancelled.interface';

/** SQLSTATE of a missing table. */
const UNDEFINED_TABLE = '42P01';
/** Hooks claimed per round trip. */
const HOOK_BATCH = 50;
/**
 * A claimed hook is claimed again after this long even if its node still heartbeats (a call that
 * hangs); the hook of a node that stopped heartbeating is claimed again after `nodeTimeout`.
 */
const HOOK_LEASE_MS = 5 * 60_000;
/** Calls of a lifecycle hook that keeps throwing, and the back-off between them (1 s doubling, at most 5 min). */
export const HOOK_RETRY: ResolvedRetry = { ...DEFAULT_RETRY, attempts: 25 };
/**
 * How often the deeper repairs run at most (scans of open edges and waiting nodes; they find only
 * what a disabled trigger or a hand-made change left behind), and at least every `nodeTimeout`.
 */
const DEEP_REPAIR_EVERY_MS = 60_000;

/**
 * The flows' part of the maintenance pass: repairs stuck flows (see docs/flows.md); and the hooks
 * owed to ended runs: flow nodes' `afterCancelled`, and the lifecycle hooks (`onRunCompleted`,
 * `onRunFailed`, `onRunCancelled`, see docs/nest.md).
 */
@Injectable()
export class FlowMaintenance implements BeforeApplicationShutdown {
  private readonly logger = new Logger(LOG_CONTEXT);
  private hooking?: Promise<void>;
  private stopping = false;
  /** When the last deep repair began (on {@link monotonicMs}: a clock stepped back does not put the next one off). */
  private lastDeepRepairAt = -Infinity;
  /** Where the last pruning of flow rows stopped (each pass reads a page; a new leader starts from the oldest). */
  private pruneAfter: FlowPruneCursor | null = null;

  constructor(
    private readonly connection: DurableConnection,
    private readonly registry: WorkflowRegistry,
    private readonly store: FlowsStore,
    private readonly runs: RunsStore,
    private readonly hooks: HooksStore,
    @Inject(RESOLVED_OPTIONS) private readonly options: ResolvedOptions,
  ) {}

  /** A transaction (repairs that must hold a flow's row), bounded as the maintenance pass's statements are (`DurableConnection.maintenanceDb`). */
  private readonly tx = <T>(fn: (q: Queryable) => Promise<T>): Promise<T> => this.connection.maintenanceDb.tx(fn);

  /**
   * Maintenance (see docs/flows.md), safe on many nodes at once: deps that never
   * appeared in quiet flows count as deleted; now and then, open edges whose dep is final are
   * resolved and waiting nodes with nothing left to wait for are made pending; flow rows with no
   * runs left past retention are dropped.
   */
  async maintain(q: Queryable): Promise<void> {
    const { options } = this;
    const grace = options.nodeTimeoutMs;
    const cancelled: string[] = [];
    try {
      await this.maintainFlows(q, grace, cancelled);
    } finally {
      // the nodes the repairs cancelled (a dep counted deleted, or one that ended unnoticed), once their transactions committed
      for (const workflow of cancelled) emitRunFinished(workflow, 'cancelled');
    }
  }

  /** The repairs of {@link maintain}; the workflows of the nodes they cancel are pushed to `cancelled`. */
  private async maintainFlows(q: Queryable, grace: number, cancelled: string[]): Promise<void> {
    const { options } = this;
    await this.store.repairMissing(q, this.tx, grace, 100, false, cancelled);
    const every = Math.min(DEEP_REPAIR_EVERY_MS, options.nodeTimeoutMs);
    if (monotonicMs() - this.lastDeepRepairAt >= every) {
      this.lastDeepRepairAt = monotonicMs();
      const woke = (await this.store.repairMissedEdges(q, this.tx, 100, cancelled)) + (await this.store.repairStalled(q, 1000));
      if (woke > 0) this.logger.warn(`flow repair: woke ${woke} node(s) whose deps had finished unnoticed`);
      await this.store.repairMissing(q, this.tx, grace, 100, true, cancelled);
      if (options.retention.runsMs !== false) {
        this.pruneAfter = (await this.store.pruneFlows(q, options.retention.runsMs, 1000, this.pruneAfter)).next;
      }
    }
  }

  /**
   * Records which lifecycle hooks this node's workflows have (`hook_workflows`), before the node
   * ends any run: from then on a run of such a workflow owes its hook in the transaction that ends it.
   */
  async registerHooks(): Promise<void> {
    const { registry } = this;
    const hooks = new Map(registry.names().map((name) => [name, lifecycleHooksOf(registry.find(name)!.instance)]));
    if (hooks.size === 0) return;
    try {
      await this.hooks.register(this.connection.db, hooks);
    } catch (err) {
      // a schema the app migrates itself (migrationsRun: false) and has not brought this far yet
      if (sqlState(err) !== UNDEFINED_TABLE) throw err;
      this.logger.warn(`lifecycle hooks are off: the schema lacks the table hook_workflows (run the module's migrations, DurableRunHooks1733040011000)`);
    }
  }

  /**
   * Runs due hooks (`afterCancelled`, lifecycle hooks) of the workflows registered here, in the
   * background (one loop per node at a time). Every worker node calls it with its heartbeat: a
   * hook runs where its workflow is.
   */
  kickHooks(): void {
    if (this.hooking || this.stopping) return;
    this.hooking = this.runHooks()
      .then(() => undefined)
      .catch((err) => this.logger.warn(`run hooks: ${(err as Error).message}`))
      .finally(() => {
        this.hooking = undefined;
      });
  }

  /** On shutdown: claim no more hooks and let the ones running finish (within `shutdownTimeout`). */
  async beforeApplicationShutdown(): Promise<void> {
    this.stopping = true;
    const running = this.hooking;
    if (!running) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([running, new Promise((r) => (timer = setTimeout(r, this.options.shutdownTimeoutMs)))]);
    if (timer) clearTimeout(timer);
  }

  /**
   * Claims and runs due hooks until none is left. Each is leased to this node and deleted once it
   * returned; a lifecycle hook that throws is called again after a back-off (at most
   * {@link HOOK_RETRY}`.attempts` calls), an `afterCancelled` that throws is only logged.
   */
  async runHooks(): Promise<number> {
    const { registry, options } = this;
    const { db } = this.connection;
    const workflows = registry.names();
    if (workflows.length === 0) return 0;
    let ran = 0;
    while (!this.stopping) {
      const claimed = await this.hooks.claim(db, workflows, HOOK_BATCH, HOOK_LEASE_MS, options.nodeId, options.nodeTimeoutMs);
      if (claimed.length === 0) return ran;
      const called = await Promise.all(claimed.map((h) => this.callHook(h)));
      ran += called.filter(Boolean).length;
    }
    return ran;
  }

  /** Calls one claimed hook; true when it returned. */
  private async callHook(h: HookRow): Promise<boolean> {
    const { registry, logger } = this;
    const { db } = this.connection;
    const row = await this.runs.get(db, h.run_id);
    const def = row ? registry.find(row.workflow) : undefined;
    const fn = def && (def.instance as Record<string, unknown>)[h.hook];
    if (!row || !def || typeof fn !== 'function') {
      await this.hooks.done(db, h.run_id, h.hook);
      return false;
    }
    const run = toRunInfo(row, registry.stepName);
    try {
      await (h.hook === 'afterCancelled' ? fn.call(def.instance, h.reason as FlowCancelReason, run) : fn.call(def.instance, run));
    } catch (err) {
      const retried = h.hook !== 'afterCancelled' && h.attempts < HOOK_RETRY.attempts;
      // one draw of the (jittered) back-off: the delay logged is the one scheduled
      const delay = retried ? backoffDelay(HOOK_RETRY, h.attempts) : 0;
      const next = retried ? `; called again in ${delay} ms` : h.hook === 'afterCancelled' ? '' : '; given up';
      logger.error(`${h.hook} of run ${h.run_id} (${row.workflow}) threw (call ${h.attempts})${next}: ${(err as Error).stack ?? err}`);
      if (retried) {
        await this.hooks.later(db, h.run_id, h.hook, delay);
        return false;
      }
    }
    await this.hooks.done(db, h.run_id, h.hook);
    return true;
  }
}
