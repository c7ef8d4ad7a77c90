import { BeforeApplicationShutdown, Inject, Injectable, Logger } from '@nestjs/common';
import { WorkflowRegistry } from '../definition/workflow.registry';
import { DurableConnection } from '../core/durable.connection';
import { LOG_CONTEXT, RESOLVED_OPTIONS } from '../core/durable.constants';
import type { ResolvedOptions } from '../options/resolve-options';
import type { Queryable } from '../store/db';
import { FlowsStore } from '../store/flows.store';
import { toRunInfo } from '../store/run-row';
import { RunsStore } from '../store/runs.store';
import type { FlowCancelReason } from './on-flow-cancelled.interface';

/** Hooks claimed per round trip. */
const HOOK_BATCH = 50;
/** A claimed hook is retried by another node after this long (its node died mid-call). */
const HOOK_LEASE_MS = 5 * 60_000;
/**
 * How often the deeper repairs run at most (scans of open edges and waiting nodes; they find only
 * what a disabled trigger or a hand-made change left behind), and at least every `nodeTimeout`.
 */
const DEEP_REPAIR_EVERY_MS = 60_000;

/**
 * The flows' part of the maintenance pass: repairs stuck flows (see docs/flows.md) and
 * runs due `afterCancelled` hooks.
 */
@Injectable()
export class FlowMaintenance implements BeforeApplicationShutdown {
  private readonly logger = new Logger(LOG_CONTEXT);
  private hooking?: Promise<void>;
  private stopping = false;
  private lastDeepRepairAt = 0;

  constructor(
    private readonly connection: DurableConnection,
    private readonly registry: WorkflowRegistry,
    private readonly store: FlowsStore,
    private readonly runs: RunsStore,
    @Inject(RESOLVED_OPTIONS) private readonly options: ResolvedOptions,
  ) {}

  /** A transaction on the pool (repairs that must hold a flow's row). */
  private readonly tx = <T>(fn: (q: Queryable) => Promise<T>): Promise<T> => this.connection.db.tx(fn);

  /**
   * Maintenance (see docs/flows.md), safe on many nodes at once: deps that never
   * appeared in quiet flows count as deleted; now and then, open edges whose dep is final are
   * resolved and waiting nodes with nothing left to wait for are made pending; flow rows with no
   * runs left past retention are dropped.
   */
  async maintain(q: Queryable): Promise<void> {
    const { options } = this;
    const grace = options.nodeTimeoutMs;
    await this.store.repairMissing(q, this.tx, grace, 100, false);
    const every = Math.min(DEEP_REPAIR_EVERY_MS, options.nodeTimeoutMs);
    if (Date.now() - this.lastDeepRepairAt >= every) {
      this.lastDeepRepairAt = Date.now();
      const woke = (await this.store.repairMissedEdges(q, 100)) + (await this.store.repairStalled(q, 1000));
      if (woke > 0) this.logger.warn(`flow repair: woke ${woke} node(s) whose deps had finished unnoticed`);
      await this.store.repairMissing(q, this.tx, grace, 100, true);
      if (options.retention.runsMs !== false) await this.store.pruneFlows(q, options.retention.runsMs, 1000);
    }
  }

  /**
   * Runs due `afterCancelled` hooks of the workflows registered here, in the background (one loop
   * per node at a time). Every worker node calls it with its heartbeat: a hook runs where its
   * workflow is.
   */
  kickHooks(): void {
    if (this.hooking || this.stopping) return;
    this.hooking = this.runHooks()
      .then(() => undefined)
      .catch((err) => this.logger.warn(`afterCancelled hooks: ${(err as Error).message}`))
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

  /** Claims and runs due hooks until none is left; each is called once (leased, deleted after). */
  async runHooks(): Promise<number> {
    const { registry, runs, logger } = this;
    const { db } = this.connection;
    const workflows = registry.names();
    if (workflows.length === 0) return 0;
    let ran = 0;
    while (!this.stopping) {
      const hooks = await this.store.claimHooks(db, workflows, HOOK_BATCH, HOOK_LEASE_MS);
      if (hooks.length === 0) return ran;
      await Promise.all(
        hooks.map(async (h) => {
          const row = await runs.get(db, h.run_id);
          const def = row && registry.find(row.workflow);
          const fn = def && (def.instance as { afterCancelled?: unknown }).afterCancelled;
          if (row && typeof fn === 'function') {
            try {
              await (fn as (r: FlowCancelReason, run: unknown) => unknown).call(def!.instance, h.reason, toRunInfo(row, registry.stepName));
              ran++;
            } catch (err) {
              logger.error(`afterCancelled of run ${h.run_id} (${row.workflow}) threw: ${(err as Error).stack ?? err}`);
            }
          }
          await this.store.doneHook(db, h.run_id);
        }),
      );
    }
    return ran;
  }
}
