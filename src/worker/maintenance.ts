import { Inject, Injectable, Logger } from '@nestjs/common';
import { toMs, type Duration } from '../domain/duration';
import { WorkflowRegistry } from '../definition/workflow.registry';
import { DurableConnection } from '../core/durable.connection';
import { LOG_CONTEXT, RESOLVED_OPTIONS } from '../core/durable.constants';
import type { ResolvedOptions } from '../options/resolve-options';
import { ActivityStore } from '../store/activity.store';
import type { Queryable } from '../store/db';
import { NodesStore } from '../store/nodes.store';
import { RunsStore } from '../store/runs.store';
import { ANALYZED_TABLES, type AnalyzedTable } from '../store/runs.sql';
import { FlowMaintenance } from '../flows/flow.maintenance';
import { countKeyHandoffs } from '../runs/key-handoffs';

/** Rows deleted per prune statement (keeps each statement short). */
const PRUNE_BATCH = 5_000;
/** How often a node prunes, at most (more often when retention is shorter). */
const PRUNE_EVERY_MS = 60_000;
/** Fewest changed rows of `runs` or `activity` that make its statistics stale (see RunsStore.analyzeIfStale). */
const STALE_STATS_MIN_CHANGED = 10_000;
/** How often a node analyzes each of `runs` and `activity`, at most. */
const ANALYZE_EVERY_MS = 60_000;

/**
 * The maintenance pass every worker node runs with its heartbeat: recover the runs of dead nodes,
 * fail runs past their workflow timeout, prune finished runs and activity past retention, and
 * analyze `runs` and `activity` when their statistics are far behind (autovacuum off, or not yet there).
 * Every statement is safe to run on several nodes at once.
 */
@Injectable()
export class Maintenance {
  private lastPruneAt = 0;
  /** When this node last analyzed each table. */
  private readonly lastAnalyzedAt = new Map<AnalyzedTable, number>();
  /** The ANALYZE in flight, if any. */
  private analysis?: Promise<void>;

  private readonly logger = new Logger(LOG_CONTEXT);

  constructor(
    private readonly connection: DurableConnection,
    private readonly registry: WorkflowRegistry,
    private readonly nodes: NodesStore,
    private readonly runs: RunsStore,
    private readonly activity: ActivityStore,
    private readonly flows: FlowMaintenance,
    @Inject(RESOLVED_OPTIONS) private readonly options: ResolvedOptions,
  ) {}

  /** One pass. */
  async pass(q: Queryable): Promise<void> {
    const { nodes, runs, options, logger } = this;
    const recovered = await nodes.recoverDead(q, options.nodeTimeoutMs);
    if (recovered.runs > 0 || recovered.nodes > 0) {
      logger.warn(`recovered ${recovered.runs} run(s) from ${recovered.nodes} dead node(s)`);
    }
    // runs of workflows with compensations are failed by a worker instead, which compensates them
    const compensable = this.registry.names().filter((n) => this.registry.find(n)?.steps.some((st) => st.compensate !== undefined));
    // a timed-out holder's key goes to the run waiting behind it (key trigger): counted here
    await countKeyHandoffs(this.activity, logger, q, (await runs.failTimedOut(q, compensable)).tx);
    // DAG flows: repair stuck flows (see docs/flows.md) and run due afterCancelled hooks
    await this.flows.maintain(q).catch((err) => logger.warn(`flow maintenance failed: ${(err as Error).message}`));
    this.analyzeIfStale();
    const every = Math.min(PRUNE_EVERY_MS, options.retention.runsMs || PRUNE_EVERY_MS, options.retention.activityMs);
    if (Date.now() - this.lastPruneAt >= every) {
      this.lastPruneAt = Date.now();
      await this.prune(q);
    }
  }

  /**
   * The claim's plan depends on how many runs the planner thinks are pending, and reading a key's
   * activity on how many records it thinks the key has: analyzes `runs` and `activity` when their
   * statistics are far behind, on a pooled connection and without holding up the pass (the
   * heartbeat must not wait for an ANALYZE of a large table).
   */
  private analyzeIfStale(): void {
    const due = ANALYZED_TABLES.filter((t) => Date.now() - (this.lastAnalyzedAt.get(t) ?? -Infinity) >= ANALYZE_EVERY_MS);
    if (this.analysis || due.length === 0) return;
    const { runs, logger, options } = this;
    const { db } = this.connection;
    this.analysis = runs
      .analyzeIfStale(db, STALE_STATS_MIN_CHANGED, due)
      .then((analyzed) => {
        for (const t of analyzed) this.lastAnalyzedAt.set(t, Date.now());
      })
      .catch((err: Error) => logger.warn(`analyzing the tables of ${options.schema} failed: ${err.message}`))
      .finally(() => (this.analysis = undefined));
  }

  /** Resolves once no background statement of the pass is running (before the pool closes). */
  async settled(): Promise<void> {
    await this.analysis;
  }

  /** `DurableService.prune`: prunes now, on a pooled connection. */
  async pruneNow(olderThan?: Duration): Promise<{ runs: number; activity: number }> {
    const ms = olderThan === undefined ? undefined : toMs(olderThan, 'olderThan');
    return this.prune(this.connection.db, ms);
  }

  /** Prunes finished runs older than `olderThanMs` (default: retention) and old activity. */
  async prune(q: Queryable, olderThanMs?: number): Promise<{ runs: number; activity: number }> {
    const { runs, activity, options } = this;
    const out = { runs: 0, activity: 0 };
    const runsMs = olderThanMs ?? options.retention.runsMs;
    if (runsMs !== false) {
      for (let n = PRUNE_BATCH; n === PRUNE_BATCH; out.runs += n) n = await runs.prune(q, runsMs, PRUNE_BATCH);
    }
    for (let n = PRUNE_BATCH; n === PRUNE_BATCH; out.activity += n) {
      n = await activity.prune(q, olderThanMs ?? options.retention.activityMs, PRUNE_BATCH);
    }
    return out;
  }
}
