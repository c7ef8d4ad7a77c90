import { isDeepStrictEqual } from 'node:util';
import { KeyContendedError, KeyTakenError } from '../errors';
import { decideStart, MAX_HANDOFFS, statusesThatFreeKey, type DuplicateMode, type KeyDecision } from '../domain/keys.policy';
import { isFinished } from '../domain/run-info';
import { assertValid, jsonProblem } from '../domain/validation';
import { groupOf, type WorkflowDefinition } from '../definition/workflow-definition';
import type { Queryable } from '../store/db';
import type { HolderRow } from '../store/runs.types';
import type { ActivityKind, ActivityStore } from '../store/activity.store';
import type { EventsStore } from '../store/events.store';
import type { RunsStore } from '../store/runs.store';
import { emitKeyMetric, emitRunFinished } from '../observe/telemetry';
import { deliverEvent } from './event-delivery';
import { triggerOutcomes } from './trigger-outcomes';
import type { PlannedStart } from './start-plan';
import type { StartManyResult } from './start-options';

/** Telemetry a start's transaction has to count once it committed. */
export type Counted = (() => void)[];

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
 * A start whose key was held when it tried to insert, resolved in one transaction (the caller's
 * or its own): lock the holder, let the pure key policy decide (`decideStart`), hand the key off or
 * answer, and try again after a lost race, at most {@link MAX_HANDOFFS} times (`KeyContendedError`).
 * Each key event is recorded in the activity log in that transaction.
 */
export class DuplicateResolver {
  constructor(
    private readonly runs: RunsStore,
    private readonly activity: ActivityStore,
    private readonly events: EventsStore,
  ) {}

  /** Resolves `p` in the transaction of `q`; the telemetry to count once it committed joins `counted`. */
  async resolve(q: Queryable, def: WorkflowDefinition, p: PlannedStart, counted: Counted): Promise<StartManyResult> {
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
      const answer = await this.answer(q, def, p, holder!, decision, counted);
      if (answer) return answer;
      handoffs++;
    }
    return { error: new KeyContendedError() };
  }

  /** Applies a decision about a held key; undefined when the key changed hands meanwhile (try again). */
  private async answer(
    q: Queryable,
    def: WorkflowDefinition,
    p: PlannedStart,
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
        const restartWaitMs = debounced ? def.debounce!.periodMs : null;
        if (!(await runs.replaceInput(q, holder.id, input, group, restartWaitMs, p.run.priority ?? def.priority))) return undefined;
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
