import { CancelledError, TimeoutError } from '../errors';
import type { StepDefinition, WorkflowDefinition } from '../discovery/workflow-definition';
import type { ClaimedRow, Transition } from '../store/runs.store';
import type { DurableCore } from './durable.core';
import { serializeError } from './error.serialize';
import { backoffDelay } from './retry.policy';
import { ExecutionHandle, RunContextImpl } from './run-context';
import type { TransitionBatcher } from './transition.batcher';
import type { FlowNodeInfo } from '../flows/flow-context';

/** Runs one claimed run's steps from its cursor, writing each outcome through the batcher. */
export class Execution implements ExecutionHandle {
  readonly runId: string;
  readonly workflow: string;
  readonly key: string | null;
  readonly input: unknown;
  readonly epoch: number;
  readonly flowNode?: FlowNodeInfo;
  private lostReason?: Error;
  private readonly controller = new AbortController();
  private deadlineTimer?: NodeJS.Timeout;
  private timedOut = false;

  constructor(
    private readonly core: DurableCore,
    private readonly batcher: TransitionBatcher,
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
    if (row.flow_id) this.flowNode = { flowId: row.flow_id, flowName: row.flow_name ?? null, name: row.name ?? '', deps: row.deps ?? [] };
  }

  get lost(): boolean {
    return this.lostReason !== undefined;
  }

  lose(reason: Error): void {
    if (this.lostReason) return;
    this.lostReason = reason;
    this.controller.abort(reason);
  }

  /** Executes until the run finishes, waits for a retry, or is lost. Never throws. */
  async run(): Promise<void> {
    try {
      await this.steps();
    } catch (err) {
      this.core.logger.error(`run ${this.runId} (${this.workflow}): ${(err as Error).stack ?? err}`);
    } finally {
      if (this.deadlineTimer) clearTimeout(this.deadlineTimer);
    }
  }

  private async steps(): Promise<unknown> {
    const { steps } = this.def;
    const deadline = this.row.deadline_at ? new Date(this.row.deadline_at).getTime() : undefined;
    if (deadline !== undefined) {
      const left = deadline - Date.now();
      if (left <= 0) return this.finishFailed(new TimeoutError(`workflow "${this.workflow}" timed out`), this.row.step);
      this.deadlineTimer = setTimeout(() => {
        this.timedOut = true;
        this.controller.abort(new TimeoutError(`workflow "${this.workflow}" timed out`));
      }, left);
    }
    let context = { ...(this.row.context ?? {}) };
    let attempt = this.row.attempt;
    for (let index = this.row.step; index < steps.length; index++) {
      const step = steps[index];
      if (attempt > step.retry.attempts) {
        return this.finishFailed(new Error(`step "${step.name}" gave up: its worker was lost during the last attempt`), index);
      }
      const working = { ...context };
      let value: unknown;
      try {
        value = await this.attempt(step, attempt, working);
      } catch (err) {
        if (this.lost) return;
        if (this.timedOut) return this.finishFailed(new TimeoutError(`workflow "${this.workflow}" timed out`), index);
        if (attempt < step.retry.attempts) {
          const delay = backoffDelay(step.retry, attempt);
          await this.write({ status: 'pending', attempt, error: serializeError(err, { step: step.name, attempt }), delay_ms: delay });
          this.onRetryScheduled(delay);
          return;
        }
        return this.finishFailed(err, index, attempt);
      }
      if (this.lost) return;
      const last = index === steps.length - 1;
      const results = { [step.name]: value ?? null };
      const owned = last
        ? await this.write({ status: 'completed', step: index + 1, context: working, result: value ?? null, results, error: null, final: true })
        : await this.write({ status: 'running', step: index + 1, attempt: 0, context: working, results, error: null });
      if (!owned) return;
      context = working;
      attempt = 1;
    }
  }

  /** One attempt of a step, bounded by the step timeout; rejects on failure, abort or timeout. */
  private async attempt(step: StepDefinition, attempt: number, working: Record<string, unknown>): Promise<unknown> {
    const stepController = new AbortController();
    const onRunAbort = () => stepController.abort(this.controller.signal.reason);
    if (this.controller.signal.aborted) throw this.controller.signal.reason;
    this.controller.signal.addEventListener('abort', onRunAbort, { once: true });
    const ctx = new RunContextImpl(this.core, this, step.name, step.index, attempt, stepController.signal, working);
    let timer: NodeJS.Timeout | undefined;
    try {
      const aborted = new Promise<never>((_, reject) => {
        stepController.signal.addEventListener('abort', () => reject(stepController.signal.reason), { once: true });
        if (step.timeoutMs !== undefined) {
          timer = setTimeout(
            () => stepController.abort(new TimeoutError(`step "${step.name}" timed out after ${step.timeoutMs}ms`)),
            step.timeoutMs,
          );
        }
      });
      aborted.catch(() => undefined);
      return await Promise.race([Promise.resolve().then(() => step.run(ctx)), aborted]);
    } finally {
      if (timer) clearTimeout(timer);
      this.controller.signal.removeEventListener('abort', onRunAbort);
    }
  }

  private finishFailed(err: unknown, index: number, attempt?: number): Promise<boolean> {
    const step = this.def.steps[index]?.name;
    return this.write({ status: 'failed', error: serializeError(err, { step, attempt }), final: true });
  }

  private async write(t: Omit<Transition, 'id' | 'epoch'>): Promise<boolean> {
    if (this.lost) return false;
    const owned = await this.batcher.submit({ id: this.runId, epoch: this.epoch, ...t });
    if (!owned) this.lose(new CancelledError(`run ${this.runId} was cancelled or recovered by another node`));
    return owned;
  }
}
