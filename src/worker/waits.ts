import { CancelledError, ChildFailedError, DurableValidationError, TimeoutError } from '../errors';
import type { WorkflowRef } from '../definition/workflow-metadata';
import { groupOf } from '../definition/workflow-definition';
import { receivedElsewhere, type EventKind } from '../store/events.store';
import type { NewRun } from '../store/runs.types';
import type { WaitRow } from '../store/waits.store';
import { toStoredMs, type Duration } from '../domain/duration';
import type { RunServices } from './run-services';
import { assertValid, jsonProblem, nameProblem, problem, unknownOptionProblems } from '../domain/validation';
import { isFinished } from '../domain/run-info';
import { Suspension } from '../domain/suspension';
import { uuidv7 } from '../domain/uuid';
import { traceCarrier } from '../observe/telemetry';

/** Marks an error that fails the step for good (its retries would fail the same way). */
export const FINAL = Symbol.for('nestjs-durable.final');

/**
 * True for a failed child, a wait that timed out or a call refused as invalid (a misspelt option of
 * a ctx call): retrying the step cannot help.
 */
export const isFinalError = (err: unknown): boolean =>
  err instanceof ChildFailedError ||
  err instanceof DurableValidationError ||
  (typeof err === 'object' && err !== null && (err as Record<symbol, unknown>)[FINAL] === true);

/** Options of `ctx.waitForEvent` / `ctx.waitForInput`. */
export interface WaitOptions<T = unknown> {
  /** Give up after this long (counted from the first time the step reached this wait). */
  timeout?: Duration;
  /** Returned on timeout; without it the wait throws `TimeoutError`. */
  timeoutValue?: T;
}

/** One child of `ctx.parallel`. */
export interface ChildCall {
  workflow: WorkflowRef;
  input?: unknown;
}

/** Options of `ctx.callWorkflow`. */
export interface CallOptions {
  /** The child is due after this long. */
  delay?: Duration;
}

/** What a wait call needs to know about the attempt it runs in. */
export interface WaitScope {
  services: RunServices;
  runId: string;
  /** The step's index (the waits are recorded under it). */
  step: number;
  /** This call's number within the attempt (0, 1, …). */
  call: number;
  /** The lease epoch of the execution: children are started only while its claim owns the run. */
  epoch: number;
  /** This call as recorded when the run was claimed (undefined: look it up / record it). */
  recorded?: WaitRow;
  lost: boolean;
  /** Records the suspension on the attempt (so a catch-all that swallows it changes nothing) and returns it. */
  suspend(s: Suspension): Suspension;
}

function assertOwned(scope: WaitScope): void {
  if (scope.lost) throw new CancelledError(`run ${scope.runId} is no longer owned by this execution`);
}

/** `ctx.sleep`: returns once the recorded end of this sleep has passed; else suspends until then. */
export async function sleep(scope: WaitScope, duration: Duration): Promise<void> {
  const ms = toStoredMs(duration, 'ctx.sleep');
  assertOwned(scope);
  const { services } = scope;
  const row = scope.recorded ?? (await services.waits.upsert(services.db, scope.runId, scope.step, scope.call, 'sleep', null, ms));
  if (row.until === null || row.due) return;
  throw scope.suspend(new Suspension('sleep', null, new Date(row.until)));
}

/** `ctx.waitForEvent` / `ctx.waitForInput`. */
export async function waitFor<T>(scope: WaitScope, kind: EventKind, name: string, options: WaitOptions<T> = {}): Promise<T> {
  const what = kind === 'event' ? `ctx.waitForEvent('${name}')` : `ctx.waitForInput('${name}')`;
  assertValid(what, [nameProblem(name), ...unknownOptionProblems(options, ['timeout', 'timeoutValue'])]);
  const timeoutMs = options.timeout === undefined ? null : toStoredMs(options.timeout, `${what}: timeout`);
  assertOwned(scope);
  const { services } = scope;
  const row = scope.recorded ?? (await services.waits.upsert(services.db, scope.runId, scope.step, scope.call, kind, name, timeoutMs));
  if (!row.timed_out) {
    // only an event sent before the wait's timeout passed is its answer
    const got = await answer(scope, kind, name, row.until, () => services.events.receive(services.db, scope.runId, kind, name, row.until));
    if (got) return got.payload as T;
    if (!row.due) throw scope.suspend(new Suspension(kind, name, row.until && new Date(row.until)));
    // timed out, unless the event came in just now: under the run's lock, which a send takes too, an
    // event kept for this wait is its answer; a send after this sees the wait closed
    const late = await answer(scope, kind, name, row.until, () =>
      services.db.tx(async (q) => {
        await services.events.lockRun(q, scope.runId);
        const event = await services.events.receive(q, scope.runId, kind, name, row.until);
        if (!event) await services.waits.markTimedOut(q, scope.runId, scope.step, scope.call, 'timeoutValue' in options);
        return event;
      }),
    );
    if (late) return late.payload as T;
  }
  if ('timeoutValue' in options) return options.timeoutValue as T;
  // every re-run of the step would time out the same way: no retries (like a failed child)
  throw Object.assign(new TimeoutError(`${what} timed out after ${timeoutMs}ms`), { [FINAL]: true });
}

/**
 * The event a wait gets, read by `read`. When another execution of the step (a stalled one and its
 * replacement) marked another event received for the wait at the same moment, `read` fails (its
 * transaction, if any, rolled back) once that mark is committed: the event received first is the
 * answer, for both, read again here.
 */
async function answer(
  scope: WaitScope,
  kind: EventKind,
  name: string,
  until: Date | null,
  read: () => Promise<{ payload: unknown } | undefined>,
): Promise<{ payload: unknown } | undefined> {
  try {
    return await read();
  } catch (err) {
    if (!receivedElsewhere(err)) throw err;
    return scope.services.events.receive(scope.services.db, scope.runId, kind, name, until);
  }
}

/**
 * The children a retried call keeps, by position: the ids left of its earlier children (those that
 * completed, see `resetForRetry`), where the call starts the same workflow at the same place; a
 * call changed since (other workflows, another number of them) starts them anew.
 */
async function keptChildren(scope: WaitScope, had: (string | null)[], defs: { name: string }[]): Promise<(string | undefined)[]> {
  if (had.length !== defs.length) return [];
  const ids = had.filter((id): id is string => id !== null);
  const rows = await scope.services.waits.children(scope.services.db, ids);
  const workflowOf = new Map(rows.map((r) => [r.id, r.workflow]));
  return had.map((id, i) => (id !== null && workflowOf.get(id) === defs[i].name ? id : undefined));
}

/**
 * `ctx.callWorkflow` / `ctx.parallel`: starts the children once per (run, step, call) — a step that
 * runs again finds the ones it started — and suspends until all have finished; then resolves with
 * their results in order, or rejects with `ChildFailedError` for the first that did not complete.
 */
export async function callChildren(scope: WaitScope, calls: ChildCall[], options: CallOptions = {}): Promise<unknown[]> {
  const { services } = scope;
  if (!Array.isArray(calls) || calls.length === 0) assertValid('ctx.parallel', [problem('calls', calls, 'notEmpty', 'give at least one { workflow, input }')]);
  assertValid('ctx.callWorkflow', unknownOptionProblems(options, ['delay']));
  const delayMs = options.delay === undefined ? 0 : toStoredMs(options.delay, 'ctx.callWorkflow: delay');
  const defs = calls.map((c) => services.registry.get(c?.workflow));
  assertValid(
    'ctx.callWorkflow',
    calls.map((c, i) => jsonProblem(c.input, calls.length > 1 ? `calls[${i}].input` : 'input')),
  );
  assertOwned(scope);
  const had = scope.recorded ? scope.recorded.children : ((await services.waits.get(services.db, scope.runId, scope.step, scope.call))?.children ?? null);
  let ids = had;
  // the call's first time (no children), or a retry's (gaps where children did not complete)
  if (!had || had.includes(null)) {
    // a retry keeps a child that completed only where the call still starts that workflow there
    const kept = had ? await keptChildren(scope, had, defs) : [];
    // ids in call order (uuidv7 of one millisecond are not ordered among themselves)
    const newIds = defs.map(() => uuidv7()).sort();
    const children: NewRun[] = defs.map((def, i) => ({
      id: newIds[i],
      workflow: def.name,
      key: null,
      holds_key: false,
      input: calls[i].input ?? null,
      run_at: null,
      delay_ms: delayMs,
      timeout_ms: def.timeoutMs ?? null,
      priority: def.priority,
      group_key: groupOf(def, null, calls[i].input ?? null),
      parent_id: scope.runId,
      trace: traceCarrier(),
    }));
    const all = children.map((c, i) => kept[i] ?? c.id);
    const started = children.filter((_, i) => kept[i] === undefined);
    const recorded = await services.db.tx(async (q) => {
      const outcome = await services.waits.recordChildren(q, scope.runId, scope.step, scope.call, all, started.length, scope.epoch, had);
      if (outcome === 'notOwned') throw new CancelledError(`run ${scope.runId} is no longer owned by this execution; its children were not started`);
      if (outcome === 'exists') return false;
      await services.runs.insert(
        q,
        started.map((c) => ({ ...c, parent_wait: outcome.wait })),
      );
      return true;
    });
    if (recorded) throw scope.suspend(new Suspension('children', null, null));
    ids = (await services.waits.get(services.db, scope.runId, scope.step, scope.call))!.children!;
  }
  // every child of the call is started by now: the gaps were filled, here or by another execution
  const started = ids as string[];
  const rows = await services.waits.children(services.db, started);
  if (rows.length < started.length) {
    const gone = started.find((id) => !rows.some((r) => r.id === id))!;
    throw new ChildFailedError(gone, 'deleted', { name: 'Error', message: 'the child run was deleted' });
  }
  if (rows.some((r) => !isFinished(r.status as never))) throw scope.suspend(new Suspension('children', null, null));
  const failed = rows.find((r) => r.status !== 'completed');
  if (failed) throw new ChildFailedError(failed.id, failed.status, failed.error);
  return rows.map((r) => r.result);
}
