import { Inject, Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { KeyTakenError, SerializationError } from '../errors';
import { settledDuplicateStatuses } from '../domain/keys.policy';
import { arrayProblem, assertValid, optionsProblems } from '../domain/validation';
import type { StartResult } from '../domain/run-info';
import type { WorkflowDefinition } from '../definition/workflow-definition';
import type { WorkflowRef } from '../definition/workflow-metadata';
import { WorkflowRegistry } from '../definition/workflow.registry';
import type { ResolvedOptions } from '../options/resolve-options';
import { inSavepoint, retryDeadlocks, type Queryable } from '../store/db';
import { inTurn } from '../store/tx-turns';
import { onCommit, type CallerTx } from '../store/caller-tx';
import type { ClaimedRow, NewRun, StartAnswer, StartRow } from '../store/runs.types';
import { ActivityStore } from '../store/activity.store';
import { EventsStore } from '../store/events.store';
import { RunsStore } from '../store/runs.store';
import { DurableConnection } from '../core/durable.connection';
import { LocalStarts, type LocalSlot } from '../core/local-starts';
import { inBatches, writeBatches } from '../core/in-order-batches';
import { RESOLVED_OPTIONS } from '../core/durable.constants';
import { emitKeyMetric, startDone, startSpan } from '../observe/telemetry';
import { DuplicateResolver, type Counted } from './duplicate.resolver';
import { WakeCoalescer } from './wake.coalescer';
import { StartBatcher } from './start.batcher';
import { planStart, START_MANY_OPTION_NAMES, START_OPTION_NAMES, type PlannedStart } from './start-plan';
import type { StartManyItem, StartManyResult, StartOptions } from './start-options';

/** Window in which autocommit starts share one wake-up notification. */
const WAKE_WINDOW_MS = 2;

/** Most starts one statement inserts (a larger `startMany` is sent in batches of this many). */
const MAX_STATEMENT_STARTS = 1_000;
/** Statements of one unkeyed `startMany` out at once, outside a caller's transaction. */
const STATEMENTS_AT_ONCE = 2;

/**
 * The start algorithm (docs/how-it-works.md): each start validated and planned ({@link planStart}),
 * then `INSERT … ON CONFLICT DO NOTHING`; a start whose key was held goes to the
 * {@link DuplicateResolver} (lock the holder, let the pure key policy decide, hand off or answer,
 * at most three hand-offs). Runs on the caller's transaction when a `manager` is given; a
 * duplicate never raises inside it.
 */
@Injectable()
export class Starter {
  /** Wake-ups of autocommit starts, at most one in-statement NOTIFY per window (see WakeCoalescer). */
  private readonly wake: WakeCoalescer;

  /** Autocommit single starts, grouped into shared statements. */
  private readonly batcher: StartBatcher;

  /** Starts whose key was held when they tried to insert. */
  private readonly duplicates: DuplicateResolver;

  constructor(
    private readonly connection: DurableConnection,
    private readonly registry: WorkflowRegistry,
    private readonly runs: RunsStore,
    activity: ActivityStore,
    events: EventsStore,
    @Inject(RESOLVED_OPTIONS) private readonly options: ResolvedOptions,
    private readonly local: LocalStarts,
  ) {
    this.wake = new WakeCoalescer(WAKE_WINDOW_MS, () => runs.wake(connection.db));
    this.batcher = new StartBatcher((rows) => this.insertNow(connection.db, rows, false));
    this.duplicates = new DuplicateResolver(runs, activity, events);
  }

  /**
   * Validates and starts one run; a `rerun` never gets the holder back (always `KeyTakenError`).
   * `tx` (internal, in place of `manager`): a caller's transaction the start joins, its telemetry
   * counted once it committed.
   */
  async start(ref: WorkflowRef, input: unknown, given?: StartOptions, { rerun = false, tx }: { rerun?: boolean; tx?: CallerTx } = {}): Promise<StartResult> {
    const def = this.registry.get(ref);
    const options = given ?? {};
    assertValid(`start ${def.name}`, optionsProblems(options, 'options', START_OPTION_NAMES));
    return startSpan(def.name, options.key, async (span) => {
      const plan = {
        ...planStart(def, { input, key: options.key, runAt: options.runAt, priority: options.priority }, options.delay, options.onDuplicate),
        rerun,
      };
      const [result] = await this.execute(def, [plan], options.manager, tx);
      if ('error' in result) throw result.error;
      return startDone(span, result);
    });
  }

  /** Validates every item first, then inserts them in one statement; duplicates resolve one by one. */
  async startMany(ref: WorkflowRef, items: StartManyItem[], given?: { manager?: EntityManager }): Promise<StartManyResult[]> {
    const def = this.registry.get(ref);
    const options = given ?? {};
    assertValid('startMany', [arrayProblem(items, 'items'), ...optionsProblems(options, 'options', START_MANY_OPTION_NAMES)]);
    return startSpan(def.name, undefined, async (span) => {
      // every index, holes of a sparse array included (map skips them)
      const plans = Array.from(items, (item, i) => planStart(def, item, undefined, undefined, `items[${i}].`));
      return startDone(span, plans.length ? await this.execute(def, plans, options.manager) : []);
    });
  }

  private execute(def: WorkflowDefinition, plans: PlannedStart[], manager?: EntityManager, tx?: CallerTx): Promise<StartManyResult[]> {
    return this.insertOrResolve(def, plans, manager, tx).catch((err) => Promise.reject(SerializationError.wrap(err)));
  }

  private async insertOrResolve(def: WorkflowDefinition, plans: PlannedStart[], manager?: EntityManager, tx?: CallerTx): Promise<StartManyResult[]> {
    const joined = tx?.q ?? (await this.connection.join(manager, `start ${def.name}`));
    // starts made at once on one caller's transaction take turns (its savepoints are its connection's)
    return joined ? inTurn(joined, () => this.write(def, plans, joined, tx)) : this.write(def, plans);
  }

  /** Writes the starts: in the caller's transaction `joined` (`tx`'s, when given), else autocommit or a transaction of their own. */
  private async write(def: WorkflowDefinition, plans: PlannedStart[], joined?: Queryable, tx?: CallerTx): Promise<StartManyResult[]> {
    const { db } = this.connection;
    // Outside a caller's transaction the common case is one autocommit statement (shared with the
    // concurrent starts of this process); only a start the key policy cannot settle at once opens a
    // transaction of its own, to lock the holder and decide.
    // telemetry is counted once what it counts committed: at once after an autocommit statement or
    // a start's own transaction; in a caller's transaction once it committed when it is a `tx`, else
    // when the whole call returns (the caller's commit being out of sight)
    const onReturn: Counted = [];
    const count = (counted: Counted) => (joined ? onReturn.push(...counted) : counted.forEach((c) => c()));
    // a deadlock (a cancelExisting meeting a child that ends) is decided again: in a transaction of
    // its own, or in a savepoint of the caller's, which the deadlock leaves usable
    const resolve = async (p: PlannedStart) => {
      let counted: Counted = [];
      const decide = (q: Queryable) => this.duplicates.resolve(q, def, p, (counted = []));
      const result = await retryDeadlocks(() => (joined ? inSavepoint(joined, decide) : db.tx(decide)));
      count(counted);
      return result;
    };
    const rows = plans.map((p) => ({
      run: p.run,
      settled: settledDuplicateStatuses(def.reuse, p.onDuplicate, def.debounce !== undefined && !p.rerun),
    }));
    let answers: (StartAnswer | undefined)[];
    if (!joined && rows.length === 1) answers = [await this.startAlone(plans[0], rows[0])];
    else {
      // at most MAX_STATEMENT_STARTS per statement; unkeyed autocommit batches are independent, so
      // two go out at once (one is prepared while the other is written); keyed ones go in order (an
      // item's key may be held by an earlier item's run)
      const atOnce = joined || rows.some((r) => r.run.key !== null) ? 1 : STATEMENTS_AT_ONCE;
      const batches = inBatches(rows, MAX_STATEMENT_STARTS);
      answers = await writeBatches(batches, atOnce, (batch) => this.insertNow(joined ?? db, batch, joined !== undefined));
    }
    const out: StartManyResult[] = [];
    for (const [i, p] of plans.entries()) {
      const answer = answers[i];
      if (answer === undefined) out.push(await resolve(p));
      else if (answer === 'created') out.push({ runId: p.run.id, outcome: 'created' });
      else {
        count([() => emitKeyMetric('key_duplicate', def.name, { outcome: answer.rejected ? 'error' : 'useExisting' })]);
        out.push(answer.rejected ? { error: new KeyTakenError(answer.holderId, p.run.key, def.name) } : { runId: answer.holderId, outcome: 'useExisting' });
      }
    }
    onCommit(tx, () => onReturn.forEach((c) => c()));
    return out;
  }

  /**
   * An autocommit start on its own: claimed by this node as it is inserted when it can begin here
   * now (see `startHere`), else through the start batcher (shared statements).
   */
  private async startAlone(p: PlannedStart, row: StartRow): Promise<StartAnswer | undefined> {
    const { run } = p;
    // due now, without a group or a parent (a key is fine: one held sends the start the usual way),
    // and only when it would be a statement of its own anyway (concurrent starts share statements)
    const decided = [run.group_key, run.parent_id, run.runs_after_id, run.run_at, run.delay_ms].some((v) => v !== null && v !== undefined);
    const slot = decided || !this.batcher.idle ? undefined : this.local.hold(run.workflow, run.id);
    if (slot && (await this.startHere(slot, run))) return 'created';
    return this.batcher.submit(row);
  }

  /**
   * Inserts a run claimed by this node when it may claim it (else pending) and executes it here;
   * false when its key was held (nothing written: the statement that answers duplicates decides).
   */
  private async startHere(slot: LocalSlot, run: NewRun): Promise<boolean> {
    let outcome: ClaimedRow | 'queued' | 'held' = 'held';
    // a start that goes to the queue shares the wake-ups of the others (WakeCoalescer)
    const notify = this.wake.lead();
    const { nodeId, nodeTimeoutMs } = this.options;
    try {
      outcome = await this.runs.insertClaimed(this.connection.db, run, { nodeId, nodeTimeoutMs, seq: slot.seq, notify });
    } finally {
      if (typeof outcome === 'object') slot.launch(outcome);
      else slot.release();
    }
    if (outcome === 'queued' && !notify) this.wake.committedWithout();
    return outcome !== 'held';
  }

  /**
   * One statement of starts. A caller's transaction always notifies in-statement (the wake-up is
   * delivered at its commit); autocommit statements share wake-ups (WakeCoalescer).
   */
  private async insertNow(q: Queryable, rows: StartRow[], joined: boolean): Promise<(StartAnswer | undefined)[]> {
    const notify = joined || this.wake.lead();
    const relaxedCommit = !joined && this.options.activityCommit === 'asynchronous';
    const answers = await this.runs.insertOrAnswer(q, rows, { notify, relaxedCommit });
    if (!notify && answers.includes('created')) this.wake.committedWithout();
    return answers;
  }
}
