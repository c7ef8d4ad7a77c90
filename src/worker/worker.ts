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
import { ControlsStore, type ClaimLimits } from '../store/controls.store';
import type { ResolvedOptions } from '../options/resolve-options';
import type { RunServices } from './run-services';
import { Execution } from './execution';
import { LoopPulse } from './loop-pulse';
import { workerWorkflows } from './worker-workflows';
import { countTriggerOutcomes } from '../runs/trigger-outcomes';
import { Maintenance } from './maintenance';
import { FlowMaintenance } from '../flows/flow.maintenance';
import { TransitionBatcher } from './transition.batcher';
import { Slots } from './slots';
import { WakeTimer } from './wake-timer';
import { Heartbeat, type HeartbeatHost } from './heartbeat';
import { ClaimSequence } from './claim-sequence';
import { CutShortRuns } from './cut-short';
import { LocalStarts, type LocalSlot } from '../core/local-starts';
import { AsyncResource } from 'node:async_hooks';
import { GiveBack, leaseOf } from './give-back';

/** Longest a claim for too few runs (while the node is busy) is put off. */
const CLAIM_LINGER_MS = 20;
/** Beyond its free slots, a node claims the runs it will start within this long at its recent pace. */
const PREFETCH_HORIZON_MS = 100;
/**
 * Most starts claiming their run on this node at once, each a statement of its own on a pooled
 * connection; more concurrent starts share the start batcher's statements and are claimed.
 */
const HELD_AT_ONCE = 2;

/**
 * This node's worker: claims due runs in batches (`FOR UPDATE SKIP LOCKED`) for its slots and a
 * little ahead of them (what it will start within {@link PREFETCH_HORIZON_MS} at its recent pace, at
 * most `worker.prefetch`), wakes on LISTEN/NOTIFY with polling as the safety net, heartbeats per node
 * (which is also where it sees cancellations and lost leases), runs the maintenance pass, and drains
 * on shutdown. A step holds a slot only while its body runs: checkpoints and completions are written
 * in batches without one.
 */
@Injectable()
export class Worker implements OnApplicationBootstrap, BeforeApplicationShutdown {
  /** Executions on this node, by run id. */
  readonly running = new Map<string, Execution>();
  /** Runs whose step was cut short when the node fenced itself, until given back: their attempt counts. */
  private readonly cutShort = new CutShortRuns();
  /** Runs whose every end PostgreSQL refused (lease epoch by id): held, so that their steps never run again here. */
  private readonly unstorable = new Map<string, number>();
  /** The claim loop's signs of life (health: a stalled loop is unhealthy). */
  readonly pulse = new LoopPulse();
  private batcher: TransitionBatcher;
  private giveBack: GiveBack;
  private claiming = false;
  /** Since when a claim for too few free slots has been put off. */
  private deferredSince?: number;
  private lingerTimer?: NodeJS.Timeout;
  private claimAgain = false;
  private stopping = false;
  private started = false;
  private timers: NodeJS.Timeout[] = [];
  /** Wake-ups for runs due later on this node (retries, sleeps). */
  private readonly wakeTimer = new WakeTimer(() => this.tick());
  /** Only LISTENs: a statement on it would hold back the notifications until it ends. */
  private listener?: DedicatedConnection;
  private heartbeat?: Heartbeat;
  /** Numbers this node's claims, so a heartbeat can tell forgotten runs from claims still out. */
  private readonly claims = new ClaimSequence();
  private slots = new Slots(0);
  /** Most runs claimed ahead of the free slots. */
  private prefetch = 0;
  private workflows: string[] | null = null;
  /** Of those, the ones without limits (the plain claim), and the limited ones with their limits. */
  private plain: string[] = [];
  /** Runs whose starts on this node hold a slot and may insert them claimed here (see LocalStarts). */
  private readonly held = new Set<string>();
  /** The worker's own async context (not a caller's): what a start claiming here launches in. */
  private readonly scope = new AsyncResource('nestjs-durable.worker');
  private limited: ClaimLimits[] = [];
  private readonly logger = new Logger(LOG_CONTEXT);
  /** What executions use, once connected. */
  private services: RunServices;

  constructor(
    @Inject(RESOLVED_OPTIONS) private readonly options: ResolvedOptions,
    private readonly connection: DurableConnection,
    private readonly registry: WorkflowRegistry,
    private readonly maintenance: Maintenance,
    private readonly flowHooks: FlowMaintenance,
    private readonly runs: RunsStore,
    private readonly nodes: NodesStore,
    private readonly activity: ActivityStore,
    private readonly waits: WaitsStore,
    private readonly events: EventsStore,
    private readonly memos: MemosStore,
    private readonly flows: FlowsStore,
    private readonly controls: ControlsStore,
    private readonly localStarts: LocalStarts,
  ) {}

  /** True when this node runs a worker. */
  get enabled(): boolean {
    return this.options.worker !== false;
  }

  /** True while this node has fenced itself (it could not heartbeat): it claims and runs nothing until a beat succeeds. */
  get fenced(): boolean {
    return this.heartbeat?.fenced ?? false;
  }

  async onApplicationBootstrap(): Promise<void> {
    const { options, registry, runs, logger } = this;
    const { db, dataSource } = this.connection;
    const { waits, events, memos, flows } = this;
    this.services = { db, dataSource, registry, runs, logger, waits, events, memos, flows };
    this.giveBack = new GiveBack(runs, db, options.nodeId, logger);
    this.batcher = new TransitionBatcher(db, runs, options.nodeId, logger, {
      triggersActed: (tx) => countTriggerOutcomes(this.activity, logger, db, tx),
      unstorable: ({ id, epoch }) => this.unstorable.set(id, epoch),
    });
    // before this node ends any run: the runs of workflows with lifecycle hooks owe them from now on
    await this.flowHooks.registerHooks();
    if (options.worker === false) return;
    this.slots = new Slots(options.worker.concurrency);
    this.prefetch = options.worker.prefetch;
    ({ all: this.workflows, limited: this.limited, plain: this.plain } = workerWorkflows(registry, options.worker.workflows));
    if (this.workflows.length === 0) this.logger.warn('worker has no registered workflows to run; it will only heartbeat');
    const limitedNames = this.limited.map((l) => l.workflow);
    if (limitedNames.length) await this.controls.ensure(db, limitedNames);
    if (this.stopping) return;
    this.started = true;
    const config = () => this.connection.connectionConfig();
    const { nodeId } = options;
    if (options.transactionPooler) {
      this.logger.log(`transactionPooler: no LISTEN behind a transaction pooler; new runs are found by polling every ${options.worker.pollIntervalMs}ms`);
    } else {
      this.listener = new DedicatedConnection(`listener:${nodeId}`, config, this.logger, async (client, reconnected) => {
        await client.query(`LISTEN "${this.runs.channel}"`);
        client.on('notification', () => this.tick());
        // runs started while it was down were only seen by polling
        if (reconnected) this.tick();
      });
    }
    this.heartbeat = new Heartbeat(
      this.nodes,
      this.heartbeatHost(),
      {
        nodeId,
        heartbeatMs: options.heartbeatMs,
        nodeTimeoutMs: options.nodeTimeoutMs,
        connectionConfig: config,
        fallback: db,
        transactionPooler: options.transactionPooler,
      },
      this.logger,
    );
    await this.heartbeat.start();
    // listening before the app's init resolves: a run started right after boot is claimed at once
    await this.listener?.open();
    // shutdown may have begun while this node was still booting (another bootstrap hook failed)
    if (this.stopping) return;
    this.timers.push(setInterval(() => this.tick(), options.worker.pollIntervalMs));
    this.localStarts.serve({ hold: (workflow, runId) => this.hold(workflow, runId) });
    this.tick();
  }

  /**
   * Stop claiming; a run that waits for a slot (claimed ahead, between two steps, or whose step
   * ended since) is released at once, running steps get `shutdownTimeout` to finish, then the rest
   * is released too. A release costs no attempt.
   */
  async beforeApplicationShutdown(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    if (!this.started) return; // closed while it booted: it will not start (see onApplicationBootstrap)
    this.localStarts.serve(undefined);
    this.timers.forEach(clearInterval);
    this.wakeTimer.stop();
    if (this.lingerTimer) clearTimeout(this.lingerTimer);
    const { options } = this;
    const deadline = Date.now() + options.shutdownTimeoutMs;
    const shuttingDown = new CancelledError('the node is shutting down');
    // a claim (or a start claiming here) in flight still launches what it claimed: wait for it (at
    // least a second, whatever shutdownTimeout, so that what it launched is released), then stop giving out slots
    const claimed = Math.max(deadline, Date.now() + 1_000);
    while ((this.claiming || this.held.size > 0) && Date.now() < claimed) await new Promise((r) => setTimeout(r, 20));
    const all = [...this.running.values()];
    this.slots.close(shuttingDown);
    // what asks for a slot from now on is refused and lost: given back as it is, for other nodes
    // to run while the steps here finish
    // (after a failed release, only once at the end: the database is not answering)
    const givenBack = new Set<Execution>();
    let releasing = true;
    do {
      await new Promise((r) => setTimeout(r, 20));
      if (!releasing) continue;
      const waiting = all.filter((e) => e.lostFor(shuttingDown) && !givenBack.has(e));
      releasing = await this.giveBack.release(waiting, 'shutdown: runs whose next step had not begun', 'log');
      if (releasing) waiting.forEach((e) => givenBack.add(e));
    } while (this.slots.active > 0 && Date.now() < deadline);
    const late = all.filter((e) => !e.lost && this.running.get(e.runId) === e);
    for (const e of late) e.lose(shuttingDown);
    // outcomes still being written get what is left of shutdownTimeout (at least a second)
    await this.batcher.drained(Math.max(1_000, deadline - Date.now()));
    await this.maintenance.settled();
    await this.giveBack.release(
      all.filter((e) => e.lostFor(shuttingDown) && !givenBack.has(e)),
      'shutdown: runs not finished by shutdownTimeout',
      'log',
    );
    // the heartbeat removes the node's row once its beats stopped (one in flight would re-create it)
    await Promise.all([this.listener?.close(), this.heartbeat?.stop()]);
  }

  /** Asks for a claim pass now (coalesced with one in flight). */
  tick(): void {
    this.pulse.tick();
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
        if (this.stopping || this.heartbeat?.fenced || !this.workflows?.length) break;
        const { slots } = this;
        const ahead = Math.min(this.prefetch, Math.ceil(slots.pace() * PREFETCH_HORIZON_MS));
        const room = slots.size - slots.active + ahead - slots.waiting - this.held.size;
        if (room <= 0) break;
        // while runs execute, claim once a quarter of what the node takes is missing (fewer, larger
        // claims), or once such a claim has been put off for CLAIM_LINGER_MS
        const enough = this.running.size === 0 || room >= Math.max(1, Math.floor((slots.size + ahead) / 4));
        if (!enough) {
          this.deferredSince ??= Date.now();
          if (Date.now() - this.deferredSince < CLAIM_LINGER_MS) {
            this.lingerThenTick();
            break;
          }
        }
        this.deferredSince = undefined;
        const seq = this.claims.begin();
        this.pulse.claimSent();
        try {
          const rows = await this.claim(room, seq);
          for (const row of rows) this.launch(row);
          if (rows.length === room) this.claimAgain = true;
        } catch (err) {
          this.logger.warn(`claim failed: ${(err as Error).message}`);
          break;
        } finally {
          this.pulse.claimBack();
          this.claims.end(seq);
        }
      } while (this.claimAgain && !this.stopping);
    } finally {
      this.claiming = false;
    }
  }

  /**
   * Claims up to `room` runs: first those of limited workflows, within their limits and only for
   * the slots free now (a run claimed ahead would count against a limit while it waits); then, in
   * the room left, due runs of the others through the plain claim. A rate limit that held runs back
   * sets the wake-up timer to when its window frees.
   */
  private async claim(room: number, seq: number): Promise<ClaimedRow[]> {
    const { db } = this.connection;
    const by = { nodeId: this.options.nodeId, nodeTimeoutMs: this.options.nodeTimeoutMs, seq };
    const free = Math.min(room, this.slots.size - this.slots.active - this.slots.waiting);
    let limited: ClaimedRow[] = [];
    if (this.limited.length && free > 0) {
      const claim = await this.controls.claim(db, by, free, this.limited);
      // a rate window held runs back: claim again as it lets the next one begin, not at the next poll
      if (claim.retryInMs !== undefined) this.wakeTimer.after(claim.retryInMs);
      limited = claim.rows;
    }
    if (!this.plain.length || limited.length >= room) return limited;
    return [...limited, ...(await this.runs.claim(db, by, room - limited.length, this.plain))];
  }

  /**
   * Holds a slot for a start of `workflow` on this node, when one is free now and nothing waits for
   * it, the workflow has no limits (those are counted by the claim) and fewer than
   * {@link HELD_AT_ONCE} such starts are. The start's insert is a claim: numbered, out until settled.
   */
  private hold(workflow: string, runId: string): LocalSlot | undefined {
    const { slots, held, scope } = this;
    if (this.stopping || this.heartbeat?.fenced || !this.plain.includes(workflow)) return undefined;
    if (held.size >= HELD_AT_ONCE || slots.active + slots.waiting + held.size >= slots.size) return undefined;
    held.add(runId);
    const seq = this.claims.begin();
    // launched and ticked in the worker's context: the run (and any claim it leads to) never runs
    // in the caller's (its AsyncLocalStorage stores, a request's transaction, its active span)
    const settle = (then: () => void) => {
      if (!held.delete(runId)) return;
      try {
        scope.runInAsyncScope(then);
      } finally {
        this.claims.end(seq);
      }
    };
    return {
      seq,
      launch: (row) => settle(() => this.launch(row)),
      release: () => settle(() => this.tick()),
    };
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
    // fenced while its claim was out: not run here (a later successful beat gives it back)
    if (!def || this.heartbeat?.fenced) return;
    const exec = new Execution(this.services, this.batcher, this.slots, def, row, (delay) => this.wakeTimer.after(delay));
    // an earlier execution of this run still here was recovered away from this node meanwhile (its
    // lease is gone): it stops, and the new one begins only once it has (never two at once)
    const earlier = this.running.get(row.id);
    earlier?.lose(new CancelledError(`run ${row.id} was recovered and claimed again`));
    this.unstorable.delete(row.id); // held under an older lease: claimed again, it is that claim's now
    this.running.set(row.id, exec);
    const run = () => exec.run();
    exec.done = (earlier ? earlier.done.then(run, run) : run()).finally(() => {
      // a run that woke from a short wait may already be claimed again (a newer execution)
      if (this.running.get(row.id) === exec) this.running.delete(row.id);
      this.tick();
    });
  }

  /** What the heartbeat asks of this worker. */
  private heartbeatHost(): HeartbeatHost {
    return {
      owned: () => [...this.running.values()].map(leaseOf).concat([...this.unstorable].map(([id, epoch]) => ({ id, epoch }))),
      progress: () =>
        [...this.running.values()].flatMap((e) => {
          const p = e.unsentProgress();
          return p ? [{ id: e.runId, epoch: e.epoch, ...p }] : [];
        }),
      answeredBelow: () => this.claims.answeredBelow(),
      cutShort: this.cutShort,
      firstClaim: () => this.claims.firstClaim(),
      numberAbove: (seq) => this.claims.numberAbove(seq),
      lost: (runs) => {
        for (const { id, epoch } of runs) {
          if (this.unstorable.get(id) === epoch) this.unstorable.delete(id);
          const exec = this.running.get(id);
          // only the execution the beat asked about (not a newer claim of the same run)
          if (exec?.epoch === epoch) exec.lose(new CancelledError(`run ${id} was cancelled or recovered elsewhere`));
        }
      },
      fenced: (reason) => {
        this.cutShort.fence(this.running.values(), reason);
        this.unstorable.clear();
      },
      beaten: (unfenced) => {
        if (unfenced) this.tick(); // claims again at once, not at the next poll
        this.flowHooks.kickHooks();
        if (!this.stopping) void this.giveBack.stale(this.running.values());
      },
      lead: (mayRecover) => this.maintenance.lead(mayRecover),
      info: () => ({ pid: process.pid, concurrency: this.slots.size, workflows: this.workflows, running: this.slots.active }),
    };
  }
}
