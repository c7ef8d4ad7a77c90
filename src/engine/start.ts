import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { KeyContendedError, KeyTakenError } from '../errors';
import type { OnDuplicate } from '../options/workflow-options.interface';
import { toMs, type Duration } from '../options/duration';
import type { WorkflowDefinition } from '../discovery/workflow-definition';
import type { WorkflowRef } from '../discovery/workflow.registry';
import { managerQueryable, type Queryable } from '../store/db';
import type { NewRun } from '../store/runs.store';
import { DurableCore } from './durable.core';
import { assertValid, jsonProblem, keyProblem } from './input.validation';
import { decideStart, KeyDecision } from './keys.policy';
import type { StartResult } from './run-info';
import { uuidv7 } from './uuid';
import { ValidationError } from 'class-validator';

/** Options of `DurableService.start`. */
export interface StartOptions {
  /** At most one going run per (workflow, key); null or absent = no key. */
  key?: string | null;
  /** Overrides the workflow's `onDuplicate` for this call. */
  onDuplicate?: OnDuplicate;
  /** Join the caller's open transaction. */
  manager?: EntityManager;
  /** Due at this time (default now). */
  runAt?: Date;
  /** Due after this long. */
  delay?: Duration;
}

/** One item of `startMany`. */
export interface StartManyItem {
  input?: unknown;
  key?: string | null;
  runAt?: Date;
}

/** A refused item of `startMany`. */
export type StartManyResult = StartResult | { error: KeyTakenError | KeyContendedError };

/** Internal: one validated start. */
interface Planned {
  run: NewRun;
  onDuplicate: OnDuplicate;
}

/** How many times a key may change hands under one start before it gives up. */
const MAX_HANDOFFS = 3;

function dueAt(what: string, runAt: unknown, delay: unknown, problems: (ValidationError | undefined)[]): string | null {
  if (runAt !== undefined && runAt !== null) {
    if (!(runAt instanceof Date) || Number.isNaN(runAt.getTime())) {
      const e = new ValidationError();
      Object.assign(e, { property: 'runAt', value: runAt, children: [], constraints: { isDate: `${what}: runAt must be a valid Date` } });
      problems.push(e);
      return null;
    }
    return runAt.toISOString();
  }
  if (delay !== undefined && delay !== null) {
    try {
      return new Date(Date.now() + toMs(delay as Duration, 'delay')).toISOString();
    } catch (err) {
      const e = new ValidationError();
      Object.assign(e, { property: 'delay', value: delay, children: [], constraints: { isDuration: (err as Error).message } });
      problems.push(e);
    }
  }
  return null;
}

/**
 * The start algorithm of DESIGN.md: `INSERT … ON CONFLICT DO NOTHING`; on conflict lock the holder,
 * let the pure key policy decide, hand off or answer, and try again (at most three hand-offs).
 * Runs on the caller's transaction when a `manager` is given; a duplicate never raises inside it.
 */
@Injectable()
export class Starter {
  constructor(private readonly core: DurableCore) {}

  /** Validates and starts one run. */
  async start(ref: WorkflowRef, input: unknown, options: StartOptions = {}): Promise<StartResult> {
    const def = this.core.registry.get(ref);
    const plan = this.plan(def, { input, key: options.key, runAt: options.runAt }, options.delay, options.onDuplicate);
    const [result] = await this.execute(def, [plan], options.manager);
    if ('error' in result) throw result.error;
    return result;
  }

  /** Validates every item first, then inserts them in one statement; duplicates resolve one by one. */
  async startMany(ref: WorkflowRef, items: StartManyItem[], options: { manager?: EntityManager } = {}): Promise<StartManyResult[]> {
    const def = this.core.registry.get(ref);
    if (!Array.isArray(items)) assertValid('startMany', [jsonProblem(Symbol(), 'items')]);
    const plans = items.map((item, i) => this.plan(def, item ?? {}, undefined, undefined, `items[${i}].`));
    return plans.length ? this.execute(def, plans, options.manager) : [];
  }

  private plan(def: WorkflowDefinition, item: StartManyItem, delay: unknown, onDuplicate: OnDuplicate | undefined, prefix = ''): Planned {
    const problems = [keyProblem(item.key, `${prefix}key`), jsonProblem(item.input, `${prefix}input`)];
    const run_at = dueAt(`start ${def.name}`, item.runAt, delay, problems);
    assertValid(`start ${def.name}`, problems);
    const key = item.key ?? null;
    return {
      run: {
        id: uuidv7(),
        workflow: def.name,
        key,
        holds_key: key !== null,
        input: item.input ?? null,
        run_at,
        timeout_ms: def.timeoutMs ?? null,
      },
      onDuplicate: onDuplicate ?? def.onDuplicate,
    };
  }

  private async execute(def: WorkflowDefinition, plans: Planned[], manager?: EntityManager): Promise<StartManyResult[]> {
    const { db, runs } = this.core;
    // Outside a caller's transaction the common case (every key free) is one autocommit statement;
    // only a conflict opens a transaction of its own, to lock the holder and decide.
    const joined = manager?.queryRunner?.isTransactionActive ? managerQueryable(manager) : undefined;
    const inserted = await runs.insert(joined ?? db, plans.map((p) => p.run));
    const out: StartManyResult[] = [];
    for (const p of plans) {
      if (inserted.has(p.run.id)) out.push({ runId: p.run.id, outcome: 'created' });
      else out.push(joined ? await this.resolveDuplicate(joined, def, p) : await db.tx((tx) => this.resolveDuplicate(tx, def, p)));
    }
    return out;
  }

  /** Resolves a start whose key was held when it tried to insert. */
  private async resolveDuplicate(q: Queryable, def: WorkflowDefinition, p: Planned): Promise<StartManyResult> {
    const { runs, activity } = this.core;
    const key = p.run.key!;
    for (let handoffs = 0; handoffs < MAX_HANDOFFS; ) {
      const holder = await runs.lockHolder(q, def.name, key);
      const decision: KeyDecision = decideStart(
        def.reuse,
        p.onDuplicate,
        holder && { status: holder.status, pickedUp: holder.picked_up },
        holder?.id,
      );
      switch (decision.action) {
        case 'create': {
          if (holder) await runs.dropKey(q, holder.id);
          if ((await runs.insert(q, [p.run])).has(p.run.id)) {
            if (holder) {
              await activity.record(q, 'key_handed_off', p.run.id, def.name, key, { from: holder.id, fromStatus: holder.status });
            }
            return { runId: p.run.id, outcome: 'created' };
          }
          handoffs++;
          continue;
        }
        case 'useExisting':
          await runs.countReadd(q, holder!.id);
          await activity.record(q, 'key_duplicate', holder!.id, def.name, key, { outcome: 'use_existing', input: p.run.input });
          return { runId: holder!.id, outcome: 'useExisting' };
        case 'reject':
          await runs.countReadd(q, holder!.id);
          await activity.record(q, 'key_duplicate', holder!.id, def.name, key, { outcome: 'error', input: p.run.input });
          return { error: new KeyTakenError(holder!.id) };
        case 'cancelExisting': {
          const error = { name: 'CancelledError', code: 'cancelled', message: `replaced by run ${p.run.id}`, replacedBy: p.run.id };
          await runs.cancel(q, holder!.id, `replaced by run ${p.run.id}`, error);
          await runs.dropKey(q, holder!.id);
          if ((await runs.insert(q, [p.run])).has(p.run.id)) {
            await activity.record(q, 'key_duplicate', holder!.id, def.name, key, { outcome: 'cancel_existing', input: p.run.input, replacedBy: p.run.id });
            return { runId: p.run.id, outcome: 'cancelExisting' };
          }
          handoffs++;
          continue;
        }
        default:
          // runAgain, sendEvent and debounce belong to the keys issue and are not built yet.
          throw new Error(`nestjs-durable: onDuplicate "${decision.action}" is not implemented yet`);
      }
    }
    return { error: new KeyContendedError() };
  }
}
