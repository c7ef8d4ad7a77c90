import { Inject, Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { KeyContendedError, KeyTakenError, SerializationError } from '../errors';
import type { DuplicateMode, OnDuplicate } from '../domain/keys.policy';
import { groupOf, type WorkflowDefinition } from '../definition/workflow-definition';
import type { WorkflowRef } from '../definition/workflow-metadata';
import { inSavepoint, retryDeadlocks, type Queryable } from '../store/db';
import { inTurn } from '../store/tx-turns';
import { onCommit, type CallerTx } from '../store/caller-tx';
import type { ClaimedRow, HolderRow, NewRun, StartAnswer, StartRow } from '../store/runs.types';
import { isDeepStrictEqual } from 'node:util';
import { DurableConnection } from '../core/durable.connection';
import { LocalStarts, type LocalSlot } from '../core/local-starts';
import { inBatches, writeBatches } from '../core/in-order-batches';
import { RESOLVED_OPTIONS } from '../core/durable.constants';
import { WorkflowRegistry } from '../definition/workflow.registry';
import type { ResolvedOptions } from '../options/resolve-options';
import { ActivityStore, type ActivityKind } from '../store/activity.store';
import { EventsStore } from '../store/events.store';
import { RunsStore } from '../store/runs.store';
import { triggerOutcomes } from './trigger-outcomes';
import { emitKeyMetric, emitRunFinished, startDone, startSpan, traceCarrier } from '../observe/telemetry';
import {
  arrayProblem,
  assertValid,
  jsonProblem,
  keyProblem,
  onDuplicateProblem,
  optionNames,
  optionsObjectProblem,
  optionsProblems,
  priorityProblem,
  unknownOptionProblems,
} from '../domain/validation';
import { decideStart, MAX_HANDOFFS, settledDuplicateStatuses, statusesThatFreeKey, type KeyDecision } from '../domain/keys.policy';
import { isFinished, type StartResult } from '../domain/run-info';
import { uuidv7 } from '../domain/uuid';
import { deliverEvent } from './event-delivery';
import { WakeCoalescer } from './wake.coalescer';
import { StartBatcher } from './start.batcher';
import { dueAt } from './start-due';
import type { StartManyItem, StartOptions } from './start-options';

/** The option names of `start`, of a `startMany` item and of `startMany` (anything else is refused as misspelt). */
const START_OPTION_NAMES = optionNames<StartOptions>({ key: true, onDuplicate: true, manager: true, runAt: true, delay: true, priority: true });
const START_MANY_ITEM_NAMES = optionNames<StartManyItem>({ input: true, key: true, runAt: true, priority: true });
const START_MANY_OPTION_NAMES = optionNames<{ manager?: EntityManager }>({ manager: true });

/** An item's result, or why it was refused: its key could not be had, or the workflow's `debounce.merge` threw for it. */
export type StartManyResult = StartResult | { error: KeyTakenError | KeyContendedError | Error };

/** Internal: one validated start. */
interface Planned {
  run: NewRun;
  onDuplicate: OnDuplicate;
  /** A rerun: never answered with the holder, not even one in its debounce wait. */
  rerun?: boolean;
}

/** Telemetry a start's transaction has to count once it committed. */
type Counted = (() => void)[];

/** Window in which autocommit starts share one wake-up notification. */
const WAKE_WINDOW_MS = 2;

/** Most starts one statement inserts (a larger `startMany` is sent in batches of this many). */
const MAX_STATEMENT_STARTS = 1_000;
/** Statements of one unkeyed `startMany` out at once, outside a caller's transaction. */
const STATEMENTS_AT_ONCE = 2;

/**
 * The input a debounced run keeps when a start lands in its window (`debounce.merge`; the holder's
 * row is locked, so each start is folded in once). A merge result that is not JSON is refused.
 */
function mergedInput(def: WorkflowDefinition, held: unknown, incoming: unknown): unknown {
  const { merge } = def.debounce!;
  if (merge === 'last') return incoming;
  if (merge === 'first') return held;
  const out = (merge as (h: unknown, i: unknown) => unknown)(held, JSON.parse(JSON.stringify(incoming ?? null)));
  assertValid(`start ${def.name}: debounce.merge`, [jsonProblem(out, 'result')]);
  return out ?? null;
}

/**
 * The start algorithm (docs/how-it-works.md): `INSERT … ON CONFLICT DO NOTHING`; on conflict lock the holder,
 * let the pure key policy decide, hand off or answer, and try again (at most three hand-offs).
 * Runs on the caller's transaction when a `manager` is given; a duplicate never raises inside it.
 */
@Injectable()
export class Starter {
  /** Wake-ups of autocommit starts, at most one in-statement NOTIFY per window (see WakeCoalescer). */
  private readonly wake: WakeCoalescer;

  /** Autocommit single starts, grouped into shared statements. */
  private readonly batcher: StartBatcher;

  constructor(
    private readonly connection: DurableConnection,
    private readonly registry: WorkflowRegistry,
    private readonly runs: RunsStore,
    private readonly activity: ActivityStore,
    private readonly events: EventsStore,
    @Inject(RESOLVED_OPTIONS) private readonly options: ResolvedOptions,
    private readonly local: LocalStarts,
  ) {
    this.wake = new WakeCoalescer(WAKE_WINDOW_MS, () => runs.wake(connection.db));
    this.batcher = new StartBatcher((rows) => this.insertNow(connection.db, rows, false));
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
        ...this.plan(def, { input, key: options.key, runAt: options.runAt, priority: options.priority }, options.delay, options.onDuplicate),
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
      const plans = Array.from(items, (item, i) => this.plan(def, item, undefined, undefined, `items[${i}].`));
      return startDone(span, plans.length ? await this.execute(def, plans, options.manager) : []);
    });
  }

  private plan(def: WorkflowDefinition, raw: StartManyItem, delay: unknown, onDuplicate: OnDuplicate | undefined, prefix = ''): Planned {
    const notObject = optionsObjectProblem(raw, prefix ? prefix.slice(0, -1) : 'item', START_MANY_ITEM_NAMES, false);
    const item: StartManyItem = notObject ? {} : raw;
    const problems = [
      notObject,
      ...unknownOptionProblems(item, START_MANY_ITEM_NAMES, prefix),
      keyProblem(item.key, `${prefix}key`),
      jsonProblem(item.input, `${prefix}input`),
      onDuplicateProblem(onDuplicate, def.reuse),
      priorityProblem(item.priority, `${prefix}priority`),
    ];
    const key = item.key ?? null;
    const debounce = key !== null ? def.debounce : undefined;
    const due = dueAt(`start ${def.name}`, item.runAt, delay, debounce !== undefined, problems);
    assertValid(`start ${def.name}`, problems);
    // a debounced run waits its period, and is due no later than its limit (both from the database's clock)
    const times = debounce
      ? {
          run_at: null,
          delay_ms: debounce.periodMs,
          debounce_ms: debounce.timeoutMs ?? null,
          debounce_until: debounce.timeoutMs === undefined ? 'infinity' : null,
        }
      : due;
    return {
      run: {
        id: uuidv7(),
        workflow: def.name,
        key,
        holds_key: key !== null,
        input: item.input ?? null,
        ...times,
        timeout_ms: def.timeoutMs ?? null,
        priority: item.priority ?? def.priority,
        group_key: groupOf(def, key, item.input ?? null),
        trace: traceCarrier(),
      },
      onDuplicate: onDuplicate ?? def.onDuplicate,
    };
  }

  private execute(def: WorkflowDefinition, plans: Planned[], manager?: EntityManager, tx?: CallerTx): Promise<StartManyResult[]> {
    return this.insertOrResolve(def, plans, manager, tx).catch((err) => Promise.reject(SerializationError.wrap(err)));
  }

  private async insertOrResolve(def: WorkflowDefinition, plans: Planned[], manager?: EntityManager, tx?: CallerTx): Promise<StartManyResult[]> {
    const joined = tx?.q ?? (await this.connection.join(manager, `start ${def.name}`));
    // starts made at once on one caller's transaction take turns (its savepoints are its connection's)
    return joined ? inTurn(joined, () => this.write(def, plans, joined, tx)) : this.write(def, plans);
  }

  /** Writes the starts: in the caller's transaction `joined` (`tx`'s, when given), else autocommit or a transaction of their own. */
  private async write(def: WorkflowDefinition, plans: Planned[], joined?: Queryable, tx?: CallerTx): Promise<StartManyResult[]> {
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
    const resolve = async (p: Planned) => {
      let counted: Counted = [];
      const decide = (q: Queryable) => this.resolveDuplicate(q, def, p, (counted = []));
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
  private async startAlone(p: Planned, row: StartRow): Promise<StartAnswer | undefined> {
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

  /** Resolves a start whose key was held when it tried to insert. */
  private async resolveDuplicate(q: Queryable, def: WorkflowDefinition, p: Planned, counted: Counted): Promise<StartManyResult> {
    const { runs } = this;
    const key = p.run.key!;
    for (let handoffs = 0; handoffs < MAX_HANDOFFS;) {
      const holder = await runs.lockHolder(q, def.name, key);
      const decision: KeyDecision = decideStart(
        def.reuse,
        p.onDuplicate,
        holder && { status: holder.status, pickedUp: holder.picked_up, debouncing: holder.debouncing && !p.rerun },
        holder?.id,
      );
      if (decision.action === 'create') {
        if (holder) await runs.dropKey(q, holder.id);
        if ((await runs.insert(q, [p.run])).has(p.run.id)) {
          if (holder) await this.keyEvent(q, counted, 'key_handed_off', p.run.id, def, key, { from: holder.id, fromStatus: holder.status });
          return { runId: p.run.id, outcome: 'created' };
        }
        handoffs++;
        continue;
      }
      const answer = await this.answerDuplicate(q, def, p, holder!, decision, counted);
      if (answer) return answer;
      handoffs++;
    }
    return { error: new KeyContendedError() };
  }

  /** Applies a decision about a held key; undefined when the key changed hands meanwhile (try again). */
  private async answerDuplicate(
    q: Queryable,
    def: WorkflowDefinition,
    p: Planned,
    holder: HolderRow,
    decision: Exclude<KeyDecision, { action: 'create' }>,
    counted: Counted,
  ): Promise<StartManyResult | undefined> {
    const { runs } = this;
    const key = p.run.key!;
    const duplicate = (outcome: DuplicateMode | 'debounced', extra: object = {}) =>
      this.keyEvent(q, counted, 'key_duplicate', holder.id, def, key, {
        outcome,
        inputChanged: !isDeepStrictEqual(holder.input ?? null, JSON.parse(JSON.stringify(p.run.input ?? null))),
        input: p.run.input,
        ...extra,
      });
    switch (decision.action) {
      case 'useExisting':
        await duplicate('useExisting');
        return { runId: holder.id, outcome: 'useExisting' };
      case 'reject':
        await duplicate('error');
        return { error: new KeyTakenError(holder.id, key, def.name) };
      case 'cancelExisting': {
        const reason = `replaced by run ${p.run.id}`;
        await runs.dropKey(q, holder.id);
        const ended = await runs.cancel(q, holder.id, reason, { name: 'CancelledError', code: 'cancelled', message: reason, replacedBy: p.run.id });
        // counted with the children and flow dependants the triggers cancelled with it (read in this transaction)
        if (ended.runs.length > 0) counted.push(() => emitRunFinished(def.name, 'cancelled'), await triggerOutcomes(this.activity, q, ended.tx));
        if (!(await runs.insert(q, [p.run])).has(p.run.id)) return undefined;
        await runs.repointWaiter(q, def.name, key, p.run.id);
        await duplicate('cancelExisting', { replacedBy: p.run.id });
        await this.keyEvent(q, counted, 'key_handed_off', p.run.id, def, key, { from: holder.id, fromStatus: holder.status, via: 'cancelExisting' });
        return { runId: p.run.id, outcome: 'cancelExisting' };
      }
      case 'replaceInput': {
        const debounced = decision.outcome === 'debounced';
        let input: unknown;
        let group: string | null;
        try {
          input = debounced ? mergedInput(def, holder.input, p.run.input) : p.run.input;
          // the run's limits group follows its input (concurrency / rateLimit `by(input)`)
          group = groupOf(def, key, input);
        } catch (err) {
          // nothing written yet: this start alone is refused (the items of a startMany before it stay)
          return { error: err instanceof Error ? err : new Error(String(err)) };
        }
        if (!(await runs.replaceInput(q, holder.id, input, group, debounced ? def.debounce!.periodMs : null))) return undefined;
        await duplicate(decision.outcome === 'debounced' ? 'debounced' : 'runAgain');
        return { runId: holder.id, outcome: decision.outcome };
      }
      case 'runAgain': {
        const waiterId = await runs.upsertWaiter(q, p.run, holder.id, statusesThatFreeKey(def.reuse));
        await duplicate('runAgain', { runsAfter: holder.id, waitingRunId: waiterId });
        return { runId: waiterId, outcome: 'runAgain' };
      }
      case 'sendEvent': {
        // Signal-With-Start: kept until the holder waits for it (buffered), in the start's transaction.
        const outcome = await deliverEvent(this.events, q, holder.id, decision.name, p.run.input, { buffer: true });
        // gone or finished: the key is free, try again; a holder past its workflow timeout (locked,
        // still going) drops it and keeps its key until it times out: the answer is the holder
        if (outcome === undefined || (outcome === 'dropped' && isFinished(holder.status))) return undefined;
        await duplicate('sendEvent', { event: decision.name, delivery: outcome });
        return { runId: holder.id, outcome: 'sendEvent' };
      }
    }
  }

  /** Records a key event in the activity log (in the start's transaction); its count joins `counted`. */
  private async keyEvent(
    q: Queryable,
    counted: Counted,
    kind: ActivityKind,
    runId: string,
    def: WorkflowDefinition,
    key: string,
    details: object,
  ): Promise<void> {
    await this.activity.record(q, kind, runId, def.name, key, details);
    counted.push(() => emitKeyMetric(kind, def.name, details));
  }
}
