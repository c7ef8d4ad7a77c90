import { Inject, Injectable } from '@nestjs/common';
import { MAX_TIMER_MS, toMs, type Duration } from '../domain/duration';
import { monotonicMs } from '../domain/monotonic-clock';
import { DurableConnection } from '../core/durable.connection';
import { RESOLVED_OPTIONS } from '../core/durable.constants';
import type { ResolvedOptions } from '../options/resolve-options';
import { RunsStore } from '../store/runs.store';
import { Worker } from '../worker/worker';

/**
 * The shape of terminus' `HealthIndicatorResult`, declared here: `@nestjs/terminus` is an optional peer,
 * and the shipped declarations must compile in an app that does not install it.
 */
type HealthIndicatorResult = Record<string, { status: 'up' | 'down'; [detail: string]: unknown }>;

/** How long the database may take to answer the health query. */
const DB_TIMEOUT_MS = 2_000;

/**
 * How long a claim may be out before the loop counts as stalled: 3 poll intervals, and never less
 * than the claim may legitimately take — the statement timeout plus the second this side waits past
 * it (the same bound `Db` puts on the claim; past it the claim is lost, not slow). Without a statement
 * timeout nothing bounds a claim, and 3 poll intervals it is.
 */
function claimStallMs(pollIntervalMs: number, statementTimeoutMs: number | undefined): number {
  return Math.max(3 * pollIntervalMs, statementTimeoutMs === undefined ? 0 : statementTimeoutMs + 1_000);
}

/**
 * Terminus indicator (`@nestjs/terminus` is an optional peer: its result shape only is used here, and a
 * `'down'` result is returned, as terminus' own indicators do, rather than thrown): down when the
 * database does not answer in time, when this node has fenced itself (it could not heartbeat), when
 * its worker loop has not ticked within 3 poll intervals or a claim has been out longer than it may
 * take (see {@link claimStallMs}), or when
 * the oldest due pending run of a workflow that is not paused waits longer than `maxLag` (from its
 * `run_at`, or from its workflow's last resume if later). Details
 * carry the node id, pending count and lag.
 */
@Injectable()
export class DurableHealthIndicator {
  constructor(
    @Inject(RESOLVED_OPTIONS) private readonly options: ResolvedOptions,
    private readonly connection: DurableConnection,
    private readonly runs: RunsStore,
    private readonly worker: Worker,
  ) {}

  /**
   * Checks this node. `maxLag`: how long the oldest due pending run may wait (default unlimited;
   * a paused workflow's runs are not counted);
   * `timeout`: how long the database may take to answer (default 2s).
   */
  async isHealthy(key = 'durable', options: { maxLag?: Duration; timeout?: Duration } = {}): Promise<HealthIndicatorResult> {
    const result = (status: 'up' | 'down', details: Record<string, unknown>): HealthIndicatorResult => ({ [key]: { ...details, status } });
    const { options: opts, runs } = this;
    const { db } = this.connection;
    const nodeId = opts.nodeId;
    const timeoutMs = options.timeout === undefined ? DB_TIMEOUT_MS : toMs(options.timeout, 'timeout', MAX_TIMER_MS);
    let backlog: { pending: number; lagMs: number };
    try {
      backlog = await withTimeout(runs.backlog(db), timeoutMs);
    } catch (err) {
      return result('down', { nodeId, reason: `database: ${(err as Error).message}` });
    }
    const details: Record<string, unknown> = { nodeId, pending: backlog.pending, lagMs: Math.round(backlog.lagMs) };
    if (opts.worker !== false) {
      const { worker } = this;
      // on the clock the pulse keeps (monotonic): a wall clock set forward does not turn the node down
      const silentMs = Math.round(monotonicMs() - worker.pulse.aliveAt);
      details.running = worker.running.size;
      details.lastTickMsAgo = Number.isFinite(silentMs) ? silentMs : null;
      if (worker.fenced) {
        return result('down', { ...details, reason: 'this node could not heartbeat: it has fenced itself and claims nothing until a beat succeeds' });
      }
      // a claim out may take as long as its statement may (a busy database), the loop's ticks come every poll interval
      const claimOut = worker.pulse.claimOut;
      const allowedMs = claimOut ? claimStallMs(opts.worker.pollIntervalMs, opts.statementTimeoutMs) : 3 * opts.worker.pollIntervalMs;
      if (silentMs > allowedMs) {
        const reason = claimOut ? `worker loop stalled: a claim has not come back for ${silentMs}ms` : `worker loop has not ticked for ${silentMs}ms`;
        return result('down', { ...details, reason });
      }
    }
    const maxLagMs = options.maxLag === undefined ? undefined : toMs(options.maxLag, 'maxLag');
    if (maxLagMs !== undefined && backlog.lagMs > maxLagMs) {
      return result('down', { ...details, reason: `oldest due run has waited ${Math.round(backlog.lagMs)}ms (maxLag ${maxLagMs}ms)` });
    }
    return result('up', details);
  }
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    p,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${ms}ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}
