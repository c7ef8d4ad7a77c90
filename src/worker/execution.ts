import { CancelledError, ChildFailedError, TimeoutError } from '../errors';
import { workflowTimedOut } from '../domain/workflow-timeout';
import { lastCompensable, type StepDefinition, type WorkflowDefinition } from '../definition/workflow-definition';
import type { ClaimedRow, StepAttemptStatus, Transition } from '../store/runs.types';
import type { RunServices } from './run-services';
import { describeError, serializeError, type StoredError } from '../domain/serialize-error';
import { backoffDelay } from '../domain/retry.policy';
import { ExecutionHandle, RunContextImpl } from './run-context';
import type { TransitionBatcher } from './transition.batcher';
import type { FlowNodeInfo } from '../flows/flow-context';
import { isSuspension, type Suspension } from '../domain/suspension';
import { isFinalError } from './waits';
import { assertStorableResult } from './step-result';
import { runSpan, runTransition, stepSpan } from '../observe/telemetry';
import { AbortScope } from './abort.scope';
import type { Slots } from './slots';
import { ProgressSlot } from './progress-slot';
import { DbClock } from './db-clock';

/** What {@link Execution.done} is until the worker launches it. */
const NOT_LAUNCHED: Promise<void> = Promise.resolve();
const NOTHING = (): void => undefined;
/** A write not made: the run was lost before it. */
const NOT_WRITTEN: Promise<boolean> = Promise.resolve(false);

/** Runs one claimed run's steps from its cursor, writing each outcome through the batcher. */
export class Execution implements ExecutionHandle {
  readonly runId: string;
  readonly workflow: string;
  readonly key: string | null;
  readonly input: unknown;
  readonly epoch: number;
  readonly flowNode?: FlowNodeInfo;
  private lostReason?: Error;
  /** The abort state of the steps (lost, cancelled or timed out), then of the compensations. */
  private scope = new AbortScope();
  private deadlineTimer?: NodeJS.Timeout;
  private timedOut = false;
  /** When it was claimed (local time), and whether a step of it has taken a slot yet. */
  readonly claimedAt = Date.now();
  /** The database's clock (the run's times are on it), as of the claim. */
  private readonly clock: DbClock;
  private started = false;
  /** True while a step's (or compensation's) body runs: losing the run then cuts that attempt short. */
  stepping = false;
  /** When the step attempt in progress began (epoch ms, on the database's clock), for its `getRunHistory` record. */
  private attemptFrom = 0;
  /** Aborted when the run is lost: a wait for a slot ends. */
  private readonly losing = new AbortScope();
  /** Resolves once this execution has ended (see {@link run}): set by the worker that launches it. */
  done: Promise<void> = NOT_LAUNCHED;
  /** The body of the step attempt in progress or last made: a lost run's may still be running. */
  private body?: Promise<unknown>;
  /** The run's context as of the last completed step (what compensations get). */
  private context: Record<string, unknown> = {};
  private readonly progress = new ProgressSlot();
  /** Once compensating: the run's failure, and the compensation in progress. */
  private failure?: StoredError;
  private compensation?: { step: string; method: string; attempt: number };

  constructor(
    private readonly services: RunServices,
    private readonly batcher: TransitionBatcher,
    /** The node's slots: each step body runs in one. */
    private readonly slots: Slots,
    private readonly def: WorkflowDefinition,
    private readonly row: ClaimedRow,
    /** Called when a retry was scheduled on this node, with its delay. */
    private readonly onRetryScheduled: (delayMs: number) => void,
  ) {
    this.runId = row.id;
    this.workflow = row.workflow;
    this.key = row.key;
    this.input = row.input;
    this.epoch = row.epoch;
    this.clock = new DbClock(row.db_now_ms, this.claimedAt);
    if (row.flow_id) this.flowNode = { flowId: row.flow_id, flowName: row.flow_name ?? null, name: row.name ?? '', deps: row.deps ?? [] };
  }

  get lost(): boolean {
    return this.lostReason !== undefined;
  }

  /** True while it waits for its first slot (claimed ahead, not started). */
  get queued(): boolean {
    return !this.started && !this.lost;
  }

  /** True when it was lost for `reason` (e.g. the node's shutdown). */
  lostFor(reason: Error): boolean {
    return this.lostReason === reason;
  }

  lose(reason: Error): void {
    if (this.lostReason) return;
    this.lostReason = reason;
    this.losing.abort(reason);
    this.scope.abort(reason);
  }

  reportProgress(value: unknown): void {
    this.progress.report(value);
  }

  /** The progress value not written yet (see {@link ProgressSlot.unsent}): the heartbeat takes it only once its write succeeded. */
  unsentProgress(): ReturnType<ProgressSlot['unsent']> {
    return this.progress.unsent();
  }

  /** Executes until the run finishes, waits or is lost, and its last step's body has settled (see {@link ended}). Never throws. */
  run(): Promise<void> {
    // promise callbacks, not an async frame: no step frame stays alive while a completion is written (~1,500 at once in a drain)
    let steps: Promise<unknown>;
    try {
      steps = runSpan(this.row, () => this.steps());
    } catch (err) {
      steps = Promise.reject(err);
    }
    return steps.then(
      () => this.ended(),
      (err) => this.failInternally(err),
    );
  }

  /** An error of the engine's own, outside a step's body: the run fails for good (code `internal`); claimed again it would fail alike, uncounted. */
  private async failInternally(err: unknown): Promise<void> {
    this.services.logger.error(`run ${this.runId} (${this.workflow}): ${(err as Error)?.stack ?? describeError(err)}`);
    const internal = serializeError(err, { code: 'internal' });
    // while compensating, the run's failure stays its error, the internal one the compensation's
    const compensation = this.failure && { ...this.failure, compensation: { ...this.compensation, error: internal } };
    await this.write(compensation ? { status: 'compensation_failed', error: compensation, final: true } : { status: 'failed', error: internal, final: true });
    return this.ended();
  }

  /** A body that ignored the abort of its lost run holds the run on this node: a new claim of it here begins after it, never beside it. */
  private ended(): Promise<void> | undefined {
    if (this.deadlineTimer) clearTimeout(this.deadlineTimer);
    return this.lost ? this.body?.then(NOTHING, NOTHING) : undefined;
  }

  private async steps(): Promise<unknown> {
    const { steps } = this.def;
    // never changed in place: each attempt works on a copy (`working`)
    let context = (this.context = this.row.context ?? {});
    if (this.row.status === 'compensating') {
      // claimed to go on compensating (after a crash or a compensation's retry delay): no deadline
      const { compensation: _retrying, ...error } = (this.row.error ?? { name: 'Error', message: 'failed' }) as StoredError;
      return this.compensate(this.row.comp_step ?? -1, this.row.attempt, error);
    }
    const deadline = this.row.deadline_at ? new Date(this.row.deadline_at).getTime() : undefined;
    if (deadline !== undefined) {
      const left = deadline - this.clock.now();
      if (left <= 0) return this.finishFailed(workflowTimedOut(this.workflow), this.row.step);
      this.deadlineTimer = setTimeout(() => {
        this.timedOut = true;
        this.scope.abort(workflowTimedOut(this.workflow));
      }, left);
    }
    if (this.row.step >= steps.length)
      return this.finishFailed(
        new Error(`workflow "${this.workflow}" has ${steps.length} step(s): steps were removed while this run was past them`),
        steps.length,
      );
    let attempt = this.row.attempt;
    for (let index = this.row.step; index < steps.length; index++) {
      const step = steps[index];
      if (attempt > step.retry.attempts) {
        return this.finishFailed(new Error(`step "${step.name}" gave up: its worker was lost during the last attempt`), index);
      }
      const working = { ...context };
      let value: unknown;
      try {
        value = await this.inSlot(index > this.row.step, () => stepSpan(this.row, step.name, attempt, () => this.attempt(step, attempt, working)));
      } catch (err) {
        if (this.lost) return;
        if (isSuspension(err)) return this.suspend(err, index, attempt);
        if (this.timedOut) return this.finishFailed(workflowTimedOut(this.workflow), index, attempt);
        this.services.logger.debug(`${this.describe(step.name)} attempt ${attempt} of ${step.retry.attempts} failed: ${describeError(err)}`);
        // a failed child, a timed-out wait or an unstorable result fails every attempt the same way: no retries
        if (attempt < step.retry.attempts && !isFinalError(err)) {
          const delay = backoffDelay(step.retry, attempt);
          const error = serializeError(err, { step: step.name, attempt });
          await this.write({ status: 'pending', attempt, error, delay_ms: delay, ...this.tried(index, attempt, 'failed') });
          this.onRetryScheduled(delay);
          return;
        }
        return this.finishFailed(err, index, attempt);
      }
      if (this.lost) return;
      const last = index === steps.length - 1;
      const results = { [step.name]: value ?? null };
      const tried = this.tried(index, attempt, 'completed');
      // the last outcome is returned, not awaited: this frame ends while it is written
      if (last)
        return this.write({ status: 'completed', step: index + 1, context: working, result: value ?? null, results, error: null, final: true, ...tried });
      if (!(await this.write({ status: 'running', step: index + 1, attempt: 1, context: working, results, error: null, ...tried }))) return;
      context = working;
      this.context = working;
      attempt = 1;
    }
  }

  /**
   * Runs `fn` (a step's or a compensation's body) in one of the node's slots, given back as soon as
   * it settled: the checkpoint that follows is written without holding it. `continuing`: the run is
   * past its first step here (served before runs not started yet). Rejects at once when the run was
   * lost while it waited.
   */
  private async inSlot<T>(continuing: boolean, fn: () => Promise<T>): Promise<T> {
    try {
      await this.slots.acquire(continuing, this.losing);
      this.started = true;
    } catch (err) {
      this.lose(err as Error); // lost while it waited, or the node is shutting down: released unstarted
      throw err;
    }
    try {
      if (this.lostReason) throw this.lostReason;
      this.stepping = true;
      return await fn();
    } finally {
      this.stepping = false;
      this.slots.release();
    }
  }

  /** One attempt of a step, bounded by the step timeout; rejects on failure, abort or timeout. */
  private async attempt(step: StepDefinition, attempt: number, working: Record<string, unknown>): Promise<unknown> {
    const scope = this.scope; // the attempt's, whatever replaces it later
    this.attemptFrom = this.clock.now();
    if (scope.reason) throw scope.reason;
    // a step with a timeout gets a signal of its own that also follows the run's; others share the run's
    const own = step.timeoutMs === undefined ? undefined : new AbortController();
    const aborted = () => (own ? own.signal.aborted : scope.reason !== undefined);
    const ctx = new RunContextImpl(this.services, this, step.name, step.index, attempt, () => own?.signal ?? scope.signal, working);
    if (step.index === this.row.step && attempt === this.row.attempt) ctx.recordedWaits = this.row.waits; // waits: claimed with the run
    let timer: NodeJS.Timeout | undefined;
    let onAbort: ((reason: Error) => void) | undefined;
    const onOwnAbort = () => onAbort?.(own!.signal.reason);
    const onRunAbort = (reason: Error) => (own ? own.abort(reason) : onAbort?.(reason));
    scope.listen(onRunAbort);
    try {
      let value: unknown;
      try {
        // the step's outcome, or the abort's reason when that comes first
        value = await new Promise((resolve, reject) => {
          onAbort = reject;
          if (own) {
            own.signal.addEventListener('abort', onOwnAbort, { once: true });
            timer = setTimeout(() => own.abort(new TimeoutError(`step "${step.name}" timed out after ${step.timeoutMs}ms`)), step.timeoutMs);
          }
          this.body = Promise.resolve().then(() => step.run(ctx));
          this.body.then(resolve, reject);
        });
      } catch (err) {
        // a wait suspended this attempt: that is the outcome, whatever user code made of it
        throw ctx.suspension && !aborted() ? ctx.suspension : err;
      }
      if (ctx.suspension) throw ctx.suspension;
      assertStorableResult(value, step.name);
      return value;
    } finally {
      if (timer) clearTimeout(timer);
      scope.unlisten(onRunAbort);
      if (own) own.signal.removeEventListener('abort', onOwnAbort);
    }
  }

  /**
   * The run fails for good: when completed steps (before `index`) have a `compensate`, the run is
   * `compensating` and their compensations run in reverse order; else it is `failed`.
   */
  private async finishFailed(err: unknown, index: number, attempt?: number): Promise<boolean> {
    const step = this.def.steps[index]?.name;
    this.services.logger.error(`${this.describe(step)} failed for good: ${describeError(err)}`, (err as Error)?.stack);
    const child = err instanceof ChildFailedError ? { childId: err.childId, childStatus: err.childStatus, childError: err.childError } : {};
    const error = serializeError(err, { step, attempt, ...child });
    const tried = attempt === undefined ? {} : this.tried(index, attempt, 'failed');
    const first = lastCompensable(this.def, index - 1);
    if (first < 0) return this.write({ status: 'failed', error, final: true, ...tried });
    if (!(await this.write({ status: 'compensating', error, comp_step: first, attempt: 1, ...tried }))) return false;
    this.endDeadline();
    return this.compensate(first, 1, error);
  }

  /**
   * Compensations are not bounded by the workflow deadline (as when a node claims a compensating
   * run): its timer stops, and after a timeout they run under a new abort scope (the timed-out
   * step keeps its aborted signal; losing the run aborts the new scope).
   */
  private endDeadline(): void {
    if (this.deadlineTimer) clearTimeout(this.deadlineTimer);
    this.deadlineTimer = undefined;
    if (this.timedOut && !this.lost) this.scope = new AbortScope();
  }

  /** A wait is not satisfied: the run waits (holding no slot); the step runs again when it is. */
  private async suspend(s: Suspension, index: number, attempt: number): Promise<void> {
    const owned = await this.write({
      ...this.tried(index, attempt, 'suspended'),
      status: 'waiting',
      attempt: attempt - 1, // the claim that resumes it counts this attempt again
      error: null,
      wait_kind: s.kind,
      wait_name: s.waitName,
      wake_at: s.until ? s.until.toISOString() : null,
    });
    if (!owned) return;
    const deadline = this.row.deadline_at ? new Date(this.row.deadline_at).getTime() : Infinity;
    const wake = Math.min(s.until ? s.until.getTime() : Infinity, deadline);
    // a local timer for the wake-up (any node's claim also picks it up once due)
    if (wake !== Infinity) this.onRetryScheduled(Math.max(0, wake - this.clock.now()));
    // what it waits for may have arrived while the step ran: then it is pending already
    if (s.kind !== 'sleep') this.onRetryScheduled(0);
  }

  /**
   * Runs the compensations of steps `from` down to 0 (those that have one), each with its step's
   * retry policy. The cursor (`comp_step`, attempt) is saved after each, so a crash resumes here.
   */
  private async compensate(from: number, attempt: number, error: StoredError): Promise<boolean> {
    const { steps, instance } = this.def;
    let context = this.context;
    this.failure = error;
    for (let j = lastCompensable(this.def, from); j >= 0; j = lastCompensable(this.def, j - 1)) {
      const step = steps[j];
      const method = step.compensate!;
      this.compensation = { step: step.name, method, attempt };
      if (attempt > step.retry.attempts) {
        const lost = { name: 'Error', message: `compensation "${method}" gave up: its worker was lost during the last attempt` };
        const compensation = { step: step.name, method, attempt: step.retry.attempts, error: lost };
        return this.write({ status: 'compensation_failed', error: { ...error, compensation }, final: true });
      }
      const fn = (instance as Record<string, (ctx: unknown) => unknown>)[method].bind(instance);
      const comp: StepDefinition = { ...step, name: method, index: -(j + 1), run: fn };
      const working = { ...context };
      try {
        await this.inSlot(true, () => this.attempt(comp, attempt, working));
      } catch (err) {
        if (this.lost) return false;
        const cause = isSuspension(err) ? new Error(`compensation "${method}" cannot wait (sleep, events, input, children)`) : err;
        const compensation = { step: step.name, method, attempt, error: serializeError(cause) };
        if (attempt < step.retry.attempts) {
          const delay = backoffDelay(step.retry, attempt);
          const owned = await this.write({
            status: 'compensating',
            comp_step: j,
            attempt,
            error: { ...error, compensation },
            delay_ms: delay,
            release: true,
            ...this.tried(comp.index, attempt, 'failed'),
          });
          if (owned) this.onRetryScheduled(delay);
          return owned;
        }
        this.services.logger.error(`${this.describe(step.name)}: compensation "${method}" failed for good: ${describeError(cause)}`, (cause as Error)?.stack);
        return this.write({ status: 'compensation_failed', error: { ...error, compensation }, final: true, ...this.tried(comp.index, attempt, 'failed') });
      }
      if (this.lost) return false;
      const next = lastCompensable(this.def, j - 1);
      const done = this.tried(comp.index, attempt, 'completed');
      if (next < 0) return this.write({ status: 'compensated', context: working, error, final: true, ...done });
      if (!(await this.write({ status: 'compensating', comp_step: next, attempt: 1, context: working, error, ...done }))) return false;
      context = working;
      attempt = 1;
    }
    return this.write({ status: 'compensated', error, final: true });
  }

  /** The fields that record step `index`'s attempt `attempt` (a compensation's index is `-(step + 1)`), which ends now with `status`. */
  private tried(index: number, attempt: number, status: StepAttemptStatus): Partial<Transition> {
    return { tried_step: index, tried_attempt: attempt, tried_status: status, tried_from_ms: this.attemptFrom, tried_to_ms: this.clock.now() };
  }

  /** `run <id> (<workflow>) step "<step>"`: how a log line names what failed. */
  private describe(step: string | undefined): string {
    return `run ${this.runId} (${this.workflow})${step === undefined ? '' : ` step "${step}"`}`;
  }

  /** Submits `t` (a literal of the caller's own: completed here with the run's id, epoch and unsent progress). */
  private write(t: Omit<Transition, 'id' | 'epoch'>): Promise<boolean> {
    if (this.lost) return NOT_WRITTEN;
    const progress = this.unsentProgress();
    const full = Object.assign(t as Transition, { id: this.runId, epoch: this.epoch }, progress && { progress: progress.value });
    return this.batcher.submit(full).then((owned) => {
      if (owned) progress?.taken();
      runTransition(this.row, t, owned);
      if (!owned) this.lose(new CancelledError(`run ${this.runId} was cancelled or recovered by another node`));
      return owned;
    });
  }
}
