import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { CancelledError } from '../errors';
import type { ClaimedRow } from '../store/runs.types';
import { DedicatedConnection } from './dedicated-connection';
import { WorkflowRegistry } from '../definition/workflow.registry';
import { DurableConnection } from '../core/durable.connection';
import { LOG_CONTEXT, RESOLVED_OPTIONS } from '../core/durable.constants';
import { FlowsStore } from '../store/flows.store';
import { ActivityStore } from '../store/activity.store';
import { EventsStore } from '../store/events.store';
import { MemosStore } from '../store/memos.store';
import { NodesStore } from '../store/nodes.store';
import { RunsStore } from '../store/runs.store';
import { WaitsStore } from '../store/waits.store';
import type { ResolvedOptions } from '../options/resolve-options';
import type { RunServices } from './run-services';
import { Execution } from './execution';
import { countKeyHandoffs } from '../runs/key-handoffs';
import { Maintenance } from './maintenance';
import { TransitionBatcher } from './transition.batcher';

/** Longest a claim for too few free slots (while the node is busy) is put off. */
const CLAIM_LINGER_MS = 20;

/**
 * This node's worker: claims due runs in batches (`FOR UPDATE SKIP LOCKED`) into free slots, wakes
 * on LISTEN/NOTIFY with polling as the safety net, heartbeats per node (which is also where it sees
 * cancellations and lost leases), runs the maintenance pass, and drains on shutdown.
 */
@Injectable()
export class Worker implements OnApplicationBootstrap, BeforeApplicationShutdown {
  /** Executions on this node, by run id. */
  readonly running = new Map<string, Execution>();
  /** When the claim loop last ran (health: a stalled loop is unhealthy). */
  lastTickAt = 0;
  private batcher: TransitionBatcher;
  private claiming = false;
  /** Since when a claim for too few free slots has been put off. */
  private deferredSince?: number;
  private lingerTimer?: NodeJS.Timeout;
  private beating = false;
  private claimAgain = false;
  private stopping = false;
  private started = false;
  private timers: NodeJS.Timeout[] = [];
  private retryTimers = new Set<NodeJS.Timeout>();
  /** Only LISTENs: a statement on it would hold back the notifications until it ends. */
  private listener?: DedicatedConnection;
  /** Heartbeats and the maintenance pass. */
  private control?: DedicatedConnection;
  private concurrency = 0;
  private workflows: string[] | null = null;

  private readonly logger = new Logger(LOG_CONTEXT);
  /** What executions use, once connected. */
  private services: RunServices;

  constructor(
    @Inject(RESOLVED_OPTIONS) private readonly options: ResolvedOptions,
    private readonly connection: DurableConnection,
    private readonly registry: WorkflowRegistry,
    private readonly maintenance: Maintenance,
    private readonly runs: RunsStore,
    private readonly nodes: NodesStore,
    private readonly activity: ActivityStore,
    private readonly waits: WaitsStore,
    private readonly events: EventsStore,
    private readonly memos: MemosStore,
    private readonly flows: FlowsStore,
  ) {}

  /** True when this node runs a worker. */
  get enabled(): boolean {
    return this.options.worker !== false;
  }

  async onApplicationBootstrap(): Promise<void> {
    const { options, registry, runs, logger } = this;
    const { db, dataSource } = this.connection;
    const { waits, events, memos, flows } = this;
    this.services = { db, dataSource, registry, runs, logger, waits, events, memos, flows };
    this.batcher = new TransitionBatcher(db, runs, logger, (tx) => countKeyHandoffs(this.activity, logger, db, tx));
    if (options.worker === false) return;
    this.concurrency = options.worker.concurrency;
    const names = options.worker.workflows ?? registry.names();
    this.workflows = names.filter((n) => registry.find(n));
    if (this.workflows.length === 0) {
      this.logger.warn('worker has no registered workflows to run; it will only heartbeat');
    }
    this.started = true;
    const config = () => this.connection.connectionConfig();
    const { nodeId } = options;
    this.control = new DedicatedConnection(`heartbeat:${nodeId}`, config, this.logger);
    this.listener = new DedicatedConnection(`listener:${nodeId}`, config, this.logger, async (client, reconnected) => {
      await client.query(`LISTEN "${this.runs.channel}"`);
      client.on('notification', () => this.tick());
      // runs started while it was down were only seen by polling
      if (reconnected) this.tick();
    });
    await this.control.open();
    await this.beat();
    // listening before the app's init resolves: a run started right after boot is claimed at once
    await this.listener.open();
    // shutdown may have begun while this node was still booting (another bootstrap hook failed)
    if (this.stopping) return;
    this.timers.push(setInterval(() => this.tick(), options.worker.pollIntervalMs));
    this.timers.push(setInterval(() => void this.heartbeatPass(), options.heartbeatMs));
    this.tick();
  }

  /** Stop claiming, let running steps finish within `shutdownTimeout`, then release the rest. */
  async beforeApplicationShutdown(): Promise<void> {
    if (!this.started || this.stopping) return;
    this.stopping = true;
    this.timers.forEach(clearInterval);
    this.retryTimers.forEach(clearTimeout);
    if (this.lingerTimer) clearTimeout(this.lingerTimer);
    const { options, runs, nodes } = this;
    const { db } = this.connection;
    const deadline = Date.now() + options.shutdownTimeoutMs;
    // a claim in flight still launches what it claimed: wait for it, then for the runs
    while ((this.claiming || this.running.size > 0) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 20));
    }
    const left = [...this.running.values()];
    if (left.length) {
      this.logger.warn(`shutdown: releasing ${left.length} unfinished run(s) back to pending`);
      for (const e of left) e.lose(new CancelledError('the node is shutting down'));
    }
    // outcomes still being written get what is left of shutdownTimeout (at least a second)
    await this.batcher.drained(Math.max(1_000, deadline - Date.now()));
    await this.maintenance.settled();
    if (left.length) {
      await runs
        .release(
          db,
          options.nodeId,
          left.map((e) => e.runId),
        )
        .catch((err: Error) => {
          this.logger.warn(`shutdown: could not release runs (${err.message}); they are recovered after nodeTimeout`);
        });
    }
    await nodes.remove(db, options.nodeId).catch(() => undefined);
    await Promise.all([this.listener?.close(), this.control?.close()]);
  }

  /** Asks for a claim pass now (coalesced with one in flight). */
  tick(): void {
    this.lastTickAt = Date.now();
    if (this.stopping || !this.started) return;
    if (this.claiming) {
      this.claimAgain = true;
      return;
    }
    void this.claimLoop();
  }

  private async claimLoop(): Promise<void> {
    this.claiming = true;
    try {
      do {
        this.claimAgain = false;
        const free = this.concurrency - this.running.size;
        if (free <= 0 || this.stopping || !this.workflows?.length) break;
        // while runs execute, claim once a quarter of the slots is free (fewer, larger claims), or
        // once such a claim has been put off for CLAIM_LINGER_MS
        const enough = this.running.size === 0 || free >= Math.max(1, Math.floor(this.concurrency / 4));
        if (!enough) {
          this.deferredSince ??= Date.now();
          if (Date.now() - this.deferredSince < CLAIM_LINGER_MS) {
            this.lingerThenTick();
            break;
          }
        }
        this.deferredSince = undefined;
        let rows: ClaimedRow[];
        try {
          rows = await this.runs.claim(this.connection.db, this.options.nodeId, free, this.workflows);
        } catch (err) {
          this.logger.warn(`claim failed: ${(err as Error).message}`);
          break;
        }
        for (const row of rows) this.launch(row);
        if (rows.length === free) this.claimAgain = true;
      } while (this.claimAgain && !this.stopping);
    } finally {
      this.claiming = false;
    }
  }

  private lingerThenTick(): void {
    if (this.lingerTimer) return;
    this.lingerTimer = setTimeout(() => {
      this.lingerTimer = undefined;
      this.tick();
    }, CLAIM_LINGER_MS);
  }

  private launch(row: ClaimedRow): void {
    const def = this.registry.find(row.workflow);
    if (!def) return;
    const exec = new Execution(this.services, this.batcher, def, row, (delay) => this.wakeAfter(delay));
    this.running.set(row.id, exec);
    void exec.run().finally(() => {
      // a run that woke from a short wait may already be claimed again (a newer execution)
      if (this.running.get(row.id) === exec) this.running.delete(row.id);
      this.tick();
    });
  }

  private wakeAfter(delayMs: number): void {
    if (this.stopping) return;
    const t = setTimeout(() => {
      this.retryTimers.delete(t);
      this.tick();
    }, delayMs + 5);
    this.retryTimers.add(t);
  }

  /** Heartbeat + lost-run detection + maintenance, on the dedicated connection when it is up. */
  private async heartbeatPass(): Promise<void> {
    // a pass slower than the interval is not overlapped by the next (one connection, one query at a time)
    if (this.stopping || this.beating) return;
    this.beating = true;
    try {
      await this.beat();
      await this.maintenance.pass(this.control?.queryable ?? this.connection.db);
    } catch (err) {
      this.logger.warn(`heartbeat failed: ${(err as Error).message}`);
    } finally {
      this.beating = false;
    }
  }

  private async beat(): Promise<void> {
    const { nodes, options } = this;
    const owned = [...this.running.values()].map((e) => ({ id: e.runId, epoch: e.epoch }));
    const lost = await nodes.beat(this.control?.queryable ?? this.connection.db, options.nodeId, { pid: process.pid, concurrency: this.concurrency }, owned);
    const epochs = new Map(owned.map((o) => [o.id, o.epoch]));
    for (const id of lost) {
      const exec = this.running.get(id);
      // only the execution the beat asked about (not a newer claim of the same run)
      if (exec && exec.epoch === epochs.get(id)) exec.lose(new CancelledError(`run ${id} was cancelled or recovered elsewhere`));
    }
  }
}
