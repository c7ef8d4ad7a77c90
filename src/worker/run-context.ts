import type { EntityManager } from 'typeorm';
import { CancelledError, DurableValidationError } from '../errors';
import { managerQueryable } from '../store/db';
import { unknownEntityOf } from '../store/typeorm-adapter';
import type { RunServices } from './run-services';
import { assertValid, jsonProblem } from '../domain/validation';
import { FlowContextImpl, type FlowContext, type FlowNodeInfo } from '../flows/flow-context';
import type { WorkflowRef } from '../definition/workflow-metadata';
import type { Duration } from '../domain/duration';
import { Suspension } from '../domain/suspension';
import type { WaitRow } from '../store/waits.store';
import { callChildren, FINAL, sleep, waitFor, type CallOptions, type ChildCall, type WaitOptions, type WaitScope } from './waits';

/** The argument of every step: facts of this run and attempt, its context, and durable helpers. */
export interface RunContext<TInput = unknown> {
  /** This run's id. */
  readonly runId: string;
  /** The workflow's name. */
  readonly workflow: string;
  /** The run's key, or null. */
  readonly key: string | null;
  /** The run's input. */
  readonly input: TInput;
  /** Attempt number of this step (1 on the first try). */
  readonly attempt: number;
  /** The step running now. */
  readonly stepName: string;
  /** Aborted when the run is cancelled, times out, or this node loses it (seen at the next heartbeat). */
  readonly signal: AbortSignal;
  /** Inside a DAG flow only (else undefined): the flow's id, name, this node's name and readers of the other nodes. */
  readonly flow: FlowContext | undefined;
  /** A value of the run's context (saved with each completed step). */
  get<T = unknown>(name: string): T | undefined;
  /** Sets a value of the run's context; saved when this step completes, dropped if it fails. */
  put(name: string, value: unknown): void;
  /** Renews the lease for long steps; throws `CancelledError` when the run was cancelled or lost. */
  heartbeat(): Promise<void>;
  /**
   * Records a JSON progress value (e.g. `{ done: 40, of: 100 }`), read by `getRun(id).progress`,
   * the dashboard and the CLI. Kept in memory and written with the node's next heartbeat (the
   * latest value only; no write per call), and with the step's outcome.
   */
  progress(value: unknown): void;
  /**
   * Runs `fn` in a transaction that also records its result under (run, step, call): when the step
   * runs again the recorded result is returned and `fn` is not run, so its writes happen once. The
   * result is returned as recorded (JSON) the first time too.
   */
  transaction<T>(fn: (manager: EntityManager) => Promise<T>): Promise<T>;
  /**
   * Durable sleep: the run becomes `waiting` (no worker slot held) and the step runs again from its
   * start once the time has passed; then this call returns at once.
   */
  sleep(duration: Duration): Promise<void>;
  /**
   * The payload of the event `name` (see `DurableService.sendEvent`). One event per name per run: a
   * later wait for the same name returns the same payload. On timeout: `timeoutValue`, or `TimeoutError`.
   */
  waitForEvent<T = unknown>(name: string, options?: WaitOptions<T>): Promise<T>;
  /** A value someone provides with `DurableService.provideInput(runId, name, value)`. */
  waitForInput<T = unknown>(name: string, options?: WaitOptions<T>): Promise<T>;
  /** Starts a child run (no key inherited) and resolves with its result; rejects with `ChildFailedError`. */
  callWorkflow<T = unknown>(workflow: WorkflowRef, input?: unknown, options?: CallOptions): Promise<T>;
  /** Child runs side by side; resolves with their results in order once all have finished. */
  parallel<T extends unknown[] = unknown[]>(calls: ChildCall[]): Promise<T>;
}

/** What an execution shares with the contexts of its steps. */
export interface ExecutionHandle {
  readonly runId: string;
  readonly workflow: string;
  readonly key: string | null;
  readonly input: unknown;
  readonly epoch: number;
  /** True once the run was cancelled or this execution lost it. */
  readonly lost: boolean;
  /** Marks the execution lost (cancelled/fenced) and aborts its signals. */
  lose(reason: Error): void;
  /** Keeps the run's latest progress value, for the next heartbeat. */
  reportProgress(value: unknown): void;
  /** The run's flow facts (flow nodes only). */
  readonly flowNode?: FlowNodeInfo;
}

/**
 * An entity the DataSource does not know fails the step for good, saying how to register it (every
 * retry would fail the same way); anything else is returned as it is.
 */
function unknownEntity(err: unknown): unknown {
  const entity = unknownEntityOf(err);
  if (entity === undefined) return err;
  const message =
    `ctx.transaction: the durable module's DataSource does not know the entity ${entity} (${(err as Error).message}): ` +
    "give the module the app's DataSource (DurableModule.forRootAsync({ inject: [DataSource], useFactory: (dataSource) => ({ dataSource }) })) " +
    `and register ${entity} in it (TypeOrmModule.forFeature([${entity}]) with autoLoadEntities, or the DataSource's entities)`;
  return Object.assign(new DurableValidationError(message), { [FINAL]: true });
}

/** Thrown inside `ctx.transaction` to roll back when this execution no longer owns the run. */
class FencedError extends CancelledError {}

/** The {@link RunContext} of one attempt of one step. */
export class RunContextImpl<TInput = unknown> implements RunContext<TInput> {
  private calls = 0;
  private waitCalls = 0;
  /** Set when a wait of this attempt suspended the run (even if user code swallowed the throw). */
  suspension?: Suspension;
  /** The wait calls of this step recorded when the run was claimed, by call number. */
  recordedWaits?: Record<string, WaitRow> | null;

  constructor(
    private readonly services: RunServices,
    private readonly exec: ExecutionHandle,
    readonly stepName: string,
    private readonly stepIndex: number,
    readonly attempt: number,
    /** The attempt's AbortSignal, made when first read. */
    private readonly signals: () => AbortSignal,
    /** Working copy of the run's context for this attempt. */
    readonly context: Record<string, unknown>,
  ) {}

  get signal(): AbortSignal {
    return this.signals();
  }

  get runId(): string {
    return this.exec.runId;
  }
  get workflow(): string {
    return this.exec.workflow;
  }
  get key(): string | null {
    return this.exec.key;
  }
  get input(): TInput {
    return this.exec.input as TInput;
  }

  private flowCtx?: FlowContext;
  get flow(): FlowContext | undefined {
    const node = this.exec.flowNode;
    if (!node) return undefined;
    return (this.flowCtx ??= new FlowContextImpl(this.services.db, this.services.flows, this.services.registry.stepName, node));
  }

  get<T = unknown>(name: string): T | undefined {
    return this.context[name] as T | undefined;
  }

  put(name: string, value: unknown): void {
    assertValid(`ctx.put('${name}')`, [jsonProblem(value, name)]);
    this.context[name] = value === undefined ? null : JSON.parse(JSON.stringify(value));
  }

  progress(value: unknown): void {
    assertValid('ctx.progress', [jsonProblem(value, 'progress')]);
    this.exec.reportProgress(value === undefined ? null : JSON.parse(JSON.stringify(value)));
  }

  async heartbeat(): Promise<void> {
    if (this.exec.lost) throw new CancelledError(`run ${this.runId} was cancelled or is no longer owned by this node`);
    const row = await this.services.runs.getRow(this.services.db, this.runId); // its row: not its children
    if (!row || (row.status !== 'running' && row.status !== 'compensating') || row.epoch !== this.exec.epoch) {
      const err = new CancelledError(`run ${this.runId} was ${row?.status ?? 'deleted'}; this attempt stops`);
      this.exec.lose(err);
      throw err;
    }
  }

  async transaction<T>(fn: (manager: EntityManager) => Promise<T>): Promise<T> {
    const call = this.calls++;
    const { memos, db, dataSource } = this.services;
    const recorded = await memos.get(db, this.runId, this.stepIndex, call);
    if (recorded) return recorded.v as T;
    if (this.exec.lost) throw new CancelledError(`run ${this.runId} is no longer owned by this execution`);
    return dataSource.transaction(async (manager) => {
      const value = await fn(manager).catch((err: unknown) => Promise.reject(unknownEntity(err)));
      if (!(await memos.record(managerQueryable(manager), this.runId, this.stepIndex, call, value, this.exec.epoch))) {
        throw new FencedError(`run ${this.runId} is no longer owned by this execution; its transaction was rolled back`);
      }
      // what a replay returns (the recorded JSON): code after the call sees the same value either way
      return (JSON.parse(JSON.stringify({ v: value ?? null })) as { v: T }).v;
    });
  }

  sleep(duration: Duration): Promise<void> {
    return sleep(this.waitScope(), duration);
  }

  waitForEvent<T = unknown>(name: string, options?: WaitOptions<T>): Promise<T> {
    return waitFor<T>(this.waitScope(), 'event', name, options);
  }

  waitForInput<T = unknown>(name: string, options?: WaitOptions<T>): Promise<T> {
    return waitFor<T>(this.waitScope(), 'input', name, options);
  }

  async callWorkflow<T = unknown>(workflow: WorkflowRef, input?: unknown, options?: CallOptions): Promise<T> {
    const [result] = await callChildren(this.waitScope(), [{ workflow, input }], options);
    return result as T;
  }

  async parallel<T extends unknown[] = unknown[]>(calls: ChildCall[]): Promise<T> {
    return (await callChildren(this.waitScope(), calls)) as T;
  }

  /** The scope of the next wait call of this attempt (numbered in call order). */
  private waitScope(): WaitScope {
    const exec = this.exec;
    const call = this.waitCalls++;
    return {
      services: this.services,
      runId: this.runId,
      step: this.stepIndex,
      call,
      epoch: exec.epoch,
      recorded: this.recordedWaits?.[call] ?? undefined,
      get lost() {
        return exec.lost;
      },
      suspend: (s) => {
        this.suspension ??= s;
        return s;
      },
    };
  }
}
