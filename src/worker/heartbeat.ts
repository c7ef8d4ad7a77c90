import type { Logger } from '@nestjs/common';
import { monotonicMs } from '../domain/monotonic-clock';
import { bounded, boundedConnection } from '../store/bounded-queryable';
import type { Db, Queryable } from '../store/db';
import type { BeatResult, NodesStore, ProgressReport } from '../store/nodes.store';
import { SELF_FENCE_SHARE } from '../store/sql';
import type { CutShortRuns } from './cut-short';
import { DedicatedConnection } from './dedicated-connection';
import { NodeMark } from './node-mark';

/** What the heartbeat asks of, and tells, the worker it belongs to. */
export interface HeartbeatHost {
  /** The runs the node holds (executing, or claimed for its slots), with their lease epochs. */
  owned(): { id: string; epoch: number }[];
  /** Progress values of its runs not written yet; `taken()` once a beat wrote one. */
  progress(): (ProgressReport & { taken: () => void })[];
  /** Every claim numbered below this one was answered and what it took is among {@link owned} (see `ClaimSequence`). */
  answeredBelow(): number;
  /** The number of this process's first claim: the node's runs numbered below it were an earlier process's (see `ClaimSequence`). */
  firstClaim(): number;
  /** The highest claim number the database holds for the node's runs: later claims are numbered above it. */
  numberAbove(seq: number): void;
  /** Runs whose step the node cut short when it fenced itself, until a beat finds them given back. */
  cutShort: CutShortRuns;
  /** Runs among the owned ones (as given, with their epochs) that were cancelled, finished or recovered elsewhere. */
  lost(runs: { id: string; epoch: number }[]): void;
  /** The node could not heartbeat for most of `nodeTimeout`: its runs are about to be recovered elsewhere. */
  fenced(reason: Error): void;
  /** Called after each successful beat; `unfenced`: the node had fenced itself until this beat. */
  beaten(unfenced: boolean): void;
  /** Called after each successful beat while this node holds the maintenance lease. */
  lead(mayRecover: boolean): void;
  /** Shown by `listNodes`. */
  info(): object;
}

/** Settings of a {@link Heartbeat}. */
export interface HeartbeatOptions {
  nodeId: string;
  heartbeatMs: number;
  nodeTimeoutMs: number;
  /** The pg settings of the pool, for the heartbeat's own connection. */
  connectionConfig: () => object;
  /** Used while the heartbeat's own connection is down. */
  fallback: Db;
  /**
   * Behind a transaction pooler: no session settings (they would leak to other clients); each beat
   * sets its statement timeout in a transaction of its own instead.
   */
  transactionPooler: boolean;
}

/**
 * A node's heartbeat, on a connection of its own with a statement timeout: one small statement
 * per interval, never behind the maintenance pass or a saturated pool. It renews the node and the
 * maintenance lease, reports runs the node no longer owns, and gives back runs it holds without
 * running them. A node that cannot beat for most of `nodeTimeout` gives its runs up (self-fencing);
 * the lease holder may recover other nodes' runs only once it has beaten without a break for a whole
 * `nodeTimeout` (after a database outage every node gets that long to come back).
 */
export class Heartbeat {
  private readonly connection: DedicatedConnection;
  private timer?: NodeJS.Timeout;
  /** Fences the node when its time comes, unless a beat succeeds first. */
  private fenceTimer?: NodeJS.Timeout;
  /** The beat out now, if any. */
  private inFlight?: Promise<void>;
  private stopped = false;
  /** Monotonic time the last successful beat was sent, and the first one after the last failure came back. */
  private lastOkAt?: number;
  private okSince?: number;
  private fencedNow = false;
  private readonly mark: NodeMark;
  /** Past this long without a successful beat the node fences itself. */
  private readonly fenceMs: number;
  /** The server-side bound of a beat. */
  private readonly timeoutMs: number;

  constructor(
    private readonly store: NodesStore,
    private readonly host: HeartbeatHost,
    private readonly options: HeartbeatOptions,
    private readonly logger: Logger,
  ) {
    this.mark = new NodeMark(options.nodeId, options.nodeTimeoutMs, logger);
    this.fenceMs = SELF_FENCE_SHARE * options.nodeTimeoutMs;
    // each statement of a beat ends within half of nodeTimeout, however the server or the network
    // behaves (the fence's timer does not wait for a beat: a node that cannot beat fences itself on time)
    this.timeoutMs = Math.max(100, Math.floor(options.nodeTimeoutMs / 3));
    this.connection = new DedicatedConnection(
      `heartbeat:${options.nodeId}`,
      options.connectionConfig,
      logger,
      async (client) => {
        if (options.transactionPooler) return;
        await client.query(`SELECT set_config('statement_timeout', $1, false), set_config('lock_timeout', $1, false)`, [`${this.timeoutMs}ms`]);
      },
      Math.max(200, Math.floor(options.nodeTimeoutMs / 2)),
    );
  }

  /** It could not beat for most of `nodeTimeout`: its node claims and launches nothing until a beat succeeds. */
  get fenced(): boolean {
    return this.fencedNow;
  }

  /** Opens the connection and beats once (the node exists before it claims). */
  async start(): Promise<void> {
    await this.connection.open();
    await this.beat();
    // stopped meanwhile (the app closed while it booted): no timer that nothing would clear
    if (this.stopped) return;
    this.timer = setInterval(() => void this.beat(), this.options.heartbeatMs);
  }

  /**
   * Stops beating and closes the connection, once a beat in flight has ended; then gives up the
   * maintenance lease if this process holds it, and removes the node's row unless another live
   * process beats under the same node id (its runs would look orphaned without the row).
   */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    clearTimeout(this.fenceTimer);
    await this.inFlight;
    await this.connection.close();
    const keepRow = this.mark.keepRow(monotonicMs());
    await this.store.remove(this.options.fallback, this.options.nodeId, this.mark.id, keepRow).catch(() => undefined);
  }

  /** One beat (skipped while the previous one is still out). */
  beat(): Promise<void> {
    this.checkFence();
    if (this.inFlight) return this.inFlight;
    this.inFlight = this.beatOnce().finally(() => (this.inFlight = undefined));
    return this.inFlight;
  }

  private async beatOnce(): Promise<void> {
    try {
      // together, in one turn: a claim still out then, or begun since, is numbered from answeredBelow up
      const running = this.host.owned();
      const answeredBelow = this.host.answeredBelow();
      const progress = this.host.progress();
      const cutShort = this.host.cutShort.list();
      const sentAt = monotonicMs();
      const result = await this.store.beat(this.target(), {
        nodeId: this.options.nodeId,
        info: this.host.info(),
        running,
        progress: progress.map(({ id, epoch, value }) => ({ id, epoch, value })),
        leaseMs: this.options.nodeTimeoutMs,
        answeredBelow,
        firstClaim: this.host.firstClaim(),
        process: this.mark.id,
        giveBack: this.mark.mayGiveBack(sentAt),
        cutShort,
      });
      this.host.cutShort.settled(cutShort, result.cutShortHeld);
      const held = new Set(result.progressHeld);
      for (const p of progress) if (!held.has(p.id)) p.taken();
      const lost = new Set(result.lost);
      this.ok(
        result,
        running.filter((r) => lost.has(r.id)),
        sentAt,
      );
    } catch (err) {
      this.okSince = undefined;
      this.logger.warn(`heartbeat failed: ${(err as Error).message}`);
    }
  }

  /**
   * Where a beat goes: its own connection, else the pool; behind a transaction pooler in a
   * transaction that bounds it on the server as the connection's session setting does elsewhere (a
   * beat that waits for a lock then fails there too, not only on this side while its backend waits on).
   */
  private target(): Queryable {
    const own = this.connection.queryable;
    if (!this.options.transactionPooler) return own ?? this.options.fallback;
    return own ? boundedConnection(own, this.timeoutMs) : bounded(this.options.fallback, this.timeoutMs);
  }

  /** A beat sent at `sentAt` succeeded: the node's row is as fresh as that (its `now()`), not as the reply. */
  private ok(result: BeatResult, lost: { id: string; epoch: number }[], sentAt: number): void {
    const now = monotonicMs();
    this.mark.beaten(result.otherProcess, now);
    this.lastOkAt = sentAt;
    if (lost.length) this.host.lost(lost);
    const { strays, interrupted } = result;
    if (strays > interrupted) this.logger.warn(`gave back ${strays - interrupted} run(s) this node held without running them`);
    if (interrupted > 0)
      this.logger.warn(
        `recovered ${interrupted} run(s) an earlier process of node ${this.options.nodeId} was running when it ended (each interrupted attempt counts)`,
      );
    if (result.maxSeq !== null) this.host.numberAbove(result.maxSeq);
    if (now - sentAt >= this.fenceMs) {
      // a reply past the fence's age: no fence lifted, no maintenance, the outage goes on
      this.okSince = undefined;
      this.checkFence();
      return;
    }
    this.okSince ??= now;
    const unfenced = this.fencedNow;
    this.fencedNow = false;
    this.armFence();
    this.host.beaten(unfenced);
    if (result.leader) this.host.lead(now - this.okSince >= this.options.nodeTimeoutMs);
  }

  /** Fences the node once `fenceMs` have passed since the last successful beat was sent, at that moment (not at the next beat's tick). */
  private armFence(): void {
    clearTimeout(this.fenceTimer);
    if (this.stopped || this.lastOkAt === undefined) return;
    this.fenceTimer = setTimeout(() => this.checkFence(), this.lastOkAt + this.fenceMs - monotonicMs() + 1);
    this.fenceTimer.unref();
  }

  /** Self-fencing: past most of `nodeTimeout` without a successful beat, the node's runs are given up. */
  private checkFence(): void {
    if (this.fencedNow || this.stopped || this.lastOkAt === undefined) return;
    const silentMs = Math.round(monotonicMs() - this.lastOkAt);
    if (silentMs < this.fenceMs) return;
    this.fencedNow = true;
    const reason = new Error(`this node could not heartbeat for ${silentMs}ms; its runs are recovered by other nodes`);
    this.logger.warn(reason.message);
    this.host.fenced(reason);
  }
}
