import { Inject, Injectable, Logger } from '@nestjs/common';
import { MAX_SPAN_MS, toMs, type Duration } from '../domain/duration';
import { monotonicMs } from '../domain/monotonic-clock';
import { callOptions } from '../domain/call-options';
import { WorkflowRegistry } from '../definition/workflow.registry';
import { lastCompensable, type WorkflowDefinition } from '../definition/workflow-definition';
import { DurableConnection } from '../core/durable.connection';
import { LOG_CONTEXT, RESOLVED_OPTIONS } from '../core/durable.constants';
import type { ResolvedOptions } from '../options/resolve-options';
import { ActivityStore } from '../store/activity.store';
import { sqlState, UNDEFINED_TABLE, type Queryable } from '../store/db';
import { NodesStore } from '../store/nodes.store';
import { RunsStore, type KeyHorizon } from '../store/runs.store';
import { statusesThatFreeKey, type ReusePolicy } from '../domain/keys.policy';
import { FINISHED_STATUSES } from '../domain/run-info';
import { ANALYZED_TABLES, type AnalyzedTable } from '../store/runs.maintenance.sql';
import { FlowMaintenance } from '../flows/flow.maintenance';
import { countTriggerOutcomes } from '../runs/trigger-outcomes';
import { emitRunFinished } from '../observe/telemetry';
import { ControlsStore } from '../store/controls.store';
import { workflowTimedOutMessage } from '../domain/workflow-timeout';
import { DefinitionsStore } from '../store/definitions.store';
import { sweepUngrouped, SWEEP_START, type SweepCursor } from './group-adoption';

/** Rows deleted per prune statement (keeps each statement short). */
const PRUNE_BATCH = 5_000;
/** Runs failed per timeout statement (of each kind). */
const TIMEOUT_BATCH = 1_000;
/** How often the lease holder prunes, at most (more often when retention is shorter). */
const PRUNE_EVERY_MS = 60_000;
/** Fewest changed rows of `runs` or `activity` that make its statistics stale (see RunsStore.analyzeIfStale). */
const STALE_STATS_MIN_CHANGED = 10_000;
/** How often each of `runs` and `activity` is analyzed, at most. */
const ANALYZE_EVERY_MS = 60_000;
/** How often the lease holder sweeps for runs of limited workflows without a group while nobody joins or boots. */
const SWEEP_EVERY_MS = 10 * 60_000;

/**
 * For each step a run of `def` may be at (0 to past the last), the index of the step whose
 * compensation runs first when the run fails there: the last completed step with a `compensate`
 * (-1: none), as the worker's own failure of a run picks it.
 */
function firstCompensations(def: WorkflowDefinition): number[] {
  return Array.from({ length: def.steps.length + 1 }, (_, step) => lastCompensable(def, step - 1));
}

/**
 * The maintenance pass, run by the one node that holds the maintenance lease (taken and renewed by
 * the heartbeats, see Heartbeat): recover the runs of dead nodes, fail runs past their workflow
 * timeout, repair flows, prune finished runs and activity past retention, and analyze `runs` and
 * `activity` when their statistics are far behind. A pass runs beside the heartbeat on the pool
 * (never holding it up), never overlaps the previous one, and stops pruning once it has used its
 * time budget (one heartbeat interval): a large backlog is pruned over several passes. Every
 * statement reads only what is due, through an index, and is safe on several nodes at once (a lease
 * that changed hands mid-pass is harmless).
 */
@Injectable()
export class Maintenance {
  /** When the last prune that left nothing behind ended. Times here are on {@link monotonicMs}: a clock stepped back puts nothing off. */
  private lastPruneAt = -Infinity;
  /** Where the sweep for runs of limited workflows without a group stands (undefined: none under way), and when the last began. */
  private sweep?: SweepCursor;
  private sweptAt = -Infinity;
  /** The cluster's members (see `NodesStore.members`) when the last sweep began. */
  private members?: string;
  /** When each table was last analyzed. */
  private readonly lastAnalyzedAt = new Map<AnalyzedTable, number>();
  /** The ANALYZE in flight, if any. */
  private analysis?: Promise<void>;
  /** The pass in flight, if any. */
  private passing?: Promise<void>;
  private stopped = false;

  private readonly logger = new Logger(LOG_CONTEXT);

  constructor(
    private readonly connection: DurableConnection,
    private readonly registry: WorkflowRegistry,
    private readonly nodes: NodesStore,
    private readonly runs: RunsStore,
    private readonly activity: ActivityStore,
    private readonly flows: FlowMaintenance,
    private readonly controls: ControlsStore,
    private readonly definitions: DefinitionsStore,
    @Inject(RESOLVED_OPTIONS) private readonly options: ResolvedOptions,
  ) {}

  /**
   * This node holds the maintenance lease: starts a pass unless one is running. `mayRecover`: the
   * node has heartbeaten without a break for `nodeTimeout`, so a node silent that long is dead (not
   * merely cut off by the same outage).
   */
  lead(mayRecover: boolean): void {
    if (this.passing || this.stopped) return;
    this.passing = this.pass(mayRecover)
      .catch((err: Error) => this.logger.warn(`maintenance pass failed: ${err.message}`))
      .finally(() => (this.passing = undefined));
  }

  /** One pass (see the class). */
  async pass(mayRecover: boolean): Promise<void> {
    const { nodes, runs, options, logger, registry } = this;
    const q = this.connection.maintenanceDb;
    const until = monotonicMs() + options.heartbeatMs;
    if (mayRecover) {
      const recovered = await nodes.recoverDead(q, options.nodeTimeoutMs);
      // a node that died holding no run is only a row to remove: nothing was lost or taken over
      if (recovered.runs > 0) logger.warn(`recovered ${recovered.runs} run(s) from ${recovered.nodes} dead node(s)`);
      else if (recovered.nodes > 0) logger.log(`removed ${recovered.nodes} dead node(s) holding no run`);
    }
    const defs = registry.names().map((n) => registry.find(n)!);
    const withCompensation = defs.filter((d) => lastCompensable(d, d.steps.length - 1) >= 0);
    const withoutCompensation = defs.filter((d) => !withCompensation.includes(d)).map((d) => d.name);
    // a timed-out holder's key goes to the run waiting behind it (key trigger), a timed-out parent's
    // children and a flow node's dependants are cancelled (the other triggers): counted here
    const timedOut = await runs.failTimedOut(
      q,
      withoutCompensation,
      TIMEOUT_BATCH,
      Object.fromEntries(withCompensation.map((d) => [d.name, firstCompensations(d)])),
      Object.fromEntries(defs.map((d) => [d.name, d.steps.map((st) => st.name)])),
    );
    // the log line of a run the sweep timed out, as a worker logs it (its step named when this node defines its workflow)
    const timedOutLine = (r: (typeof timedOut.runs)[number]) => {
      const step = registry.stepName(r.workflow, r.step);
      return `run ${r.id} (${r.workflow})${step ? ` step "${step}"` : ''} failed for good: TimeoutError: ${workflowTimedOutMessage(r.workflow)}`;
    };
    for (const r of timedOut.runs) {
      emitRunFinished(r.workflow, 'failed');
      logger.error(timedOutLine(r));
    }
    for (const r of timedOut.compensating) logger.error(`${timedOutLine(r)}; its compensations run on the node that claims it`);
    await countTriggerOutcomes(this.activity, logger, q, timedOut.tx);
    // DAG flows: repair stuck flows (see docs/flows.md) and run due afterCancelled hooks
    await this.flows.maintain(q).catch((err) => logger.warn(`flow maintenance failed: ${(err as Error).message}`));
    this.analyzeIfStale();
    const every = Math.min(PRUNE_EVERY_MS, options.retention.runsMs || PRUNE_EVERY_MS, options.retention.activityMs);
    if (monotonicMs() - this.lastPruneAt >= every) {
      const { done } = await this.prune(q, undefined, until);
      // a backlog left (the budget ran out): the next pass goes on with it
      if (done) this.lastPruneAt = monotonicMs();
    }
    await this.sweepGroups(
      q,
      defs.filter((d) => d.controls),
      until,
    );
  }

  /**
   * Gives their group to the open runs of this app's limited workflows that have none (runs
   * started before the limit, or by an app whose code lacks it; see `sweepUngrouped`): a sweep
   * begins when a node joined or left or an app booted since the last one began (or once
   * {@link SWEEP_EVERY_MS} has passed), and goes on over as many passes as it needs.
   */
  private async sweepGroups(q: Queryable, limited: WorkflowDefinition[], until: number): Promise<void> {
    if (limited.length === 0) return;
    if (!this.sweep) {
      const members = await this.nodes.members(q);
      if (members === this.members && monotonicMs() - this.sweptAt < SWEEP_EVERY_MS) return;
      [this.members, this.sweptAt, this.sweep] = [members, monotonicMs(), SWEEP_START];
    }
    const { grouped, next } = await sweepUngrouped(this.controls, q, limited, this.sweep, until);
    this.sweep = next;
    if (grouped > 0)
      this.logger.log(`gave their group to ${grouped} run(s) of limited workflows started without one (before the limit, or by an app without it)`);
  }

  /**
   * The claim's plan depends on how many runs the planner thinks are pending, and reading a key's
   * activity on how many records it thinks the key has: analyzes `runs` and `activity` when their
   * statistics are far behind, on a pooled connection and without holding up the pass (the
   * heartbeat must not wait for an ANALYZE of a large table).
   */
  private analyzeIfStale(): void {
    const due = ANALYZED_TABLES.filter((t) => monotonicMs() - (this.lastAnalyzedAt.get(t) ?? -Infinity) >= ANALYZE_EVERY_MS);
    if (this.analysis || due.length === 0) return;
    const { runs, logger, options } = this;
    const { db } = this.connection;
    this.analysis = runs
      .analyzeIfStale(db, STALE_STATS_MIN_CHANGED, due)
      .then((analyzed) => {
        for (const t of analyzed) this.lastAnalyzedAt.set(t, monotonicMs());
      })
      .catch((err: Error) => logger.warn(`analyzing the tables of ${options.schema} failed: ${err.message}`))
      .finally(() => (this.analysis = undefined));
  }

  /** Shutdown: no new pass; resolves once none (and no background statement) is running. */
  async settled(): Promise<void> {
    this.stopped = true;
    await this.passing;
    await this.analysis;
  }

  /** `DurableService.prune`: prunes now, on a pooled connection, until nothing is left. */
  async pruneNow(given?: { olderThan?: Duration } | null): Promise<{ runs: number; activity: number }> {
    const { olderThan } = callOptions('prune', given, ['olderThan']);
    const ms = olderThan === undefined ? undefined : toMs(olderThan, 'prune: olderThan', MAX_SPAN_MS);
    const { runs, activity } = await this.prune(this.connection.db, ms);
    return { runs, activity };
  }

  /**
   * `retention.keys` as the prune statements take it: the horizon and the (workflow, status) pairs
   * whose holder keeps its key — by this node's definitions, and for the workflows it does not
   * define, by the definitions the other apps wrote at their boot.
   */
  private async keyHorizon(q: Queryable): Promise<KeyHorizon | undefined> {
    const { keysMs } = this.options.retention;
    if (keysMs === undefined) return undefined;
    // a schema the app migrates itself and has not brought this far (no workflow_definitions): its own definitions only
    const stored = await this.definitions.list(q).catch((err: unknown) => (sqlState(err) === UNDEFINED_TABLE ? [] : Promise.reject(err)));
    const reuse = new Map<string, ReusePolicy>(stored.map((d) => [d.workflow, d.reuse]));
    for (const workflow of this.registry.names()) reuse.set(workflow, this.registry.find(workflow)!.reuse);
    const keeps = [...reuse].flatMap(([workflow, rule]) => {
      const frees = statusesThatFreeKey(rule);
      return FINISHED_STATUSES.filter((status) => !frees.includes(status)).map((status) => ({ workflow, status }));
    });
    return { ms: keysMs, keeps };
  }

  /**
   * Prunes finished runs older than `olderThanMs` (default: retention.runs) and activity older than
   * retention.activity (key history is kept that long whatever the runs' cutoff), in batches, until
   * none is left or `until` (on {@link monotonicMs}) has passed; `done` when none is left.
   */
  private async prune(q: Queryable, olderThanMs?: number, until = Infinity): Promise<{ runs: number; activity: number; done: boolean }> {
    const { runs, activity, options } = this;
    const out = { runs: 0, activity: 0, done: false };
    const runsMs = olderThanMs ?? options.retention.runsMs;
    // runs `statement` deletes (or changes) PRUNE_BATCH rows at a time, until fewer are left or time is up; true when none are left
    const batches = async (add: (n: number) => void, statement: () => Promise<number>): Promise<boolean> => {
      let n = PRUNE_BATCH;
      for (; n === PRUNE_BATCH && monotonicMs() < until; add(n)) n = await statement();
      return n < PRUNE_BATCH;
    };
    const addRuns = (n: number) => (out.runs += n);
    if (runsMs !== false) {
      const keys = await this.keyHorizon(q);
      if (!(await batches(addRuns, () => runs.prune(q, runsMs, PRUNE_BATCH, keys)))) return out;
      if (!(await batches(addRuns, () => runs.pruneTombstones(q, runsMs, PRUNE_BATCH, keys?.ms)))) return out;
    }
    out.done = await batches(
      (n) => (out.activity += n),
      () => activity.prune(q, options.retention.activityMs, PRUNE_BATCH),
    );
    return out;
  }
}
