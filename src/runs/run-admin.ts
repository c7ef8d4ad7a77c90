import { Injectable, Logger } from '@nestjs/common';
import {
  KeyContendedError,
  KeyTakenError,
  NoKeyError,
  NotCancellableError,
  NotFailedError,
  NotFinishedError,
  RunNotFoundError,
  UnknownWorkflowError,
} from '../errors';
import { decideStart, MAX_HANDOFFS } from '../domain/keys.policy';
import { isFinished, type StartResult } from '../domain/run-info';
import { isUuid } from '../domain/uuid';
import { assertValid, nameProblem, textProblem } from '../domain/validation';
import { callOptions } from '../domain/call-options';
import { WorkflowRegistry } from '../definition/workflow.registry';
import { DurableConnection } from '../core/durable.connection';
import { LOG_CONTEXT } from '../core/durable.constants';
import { emitKeyMetric, emitRunFinished } from '../observe/telemetry';
import { ActivityStore } from '../store/activity.store';
import { RunsStore, isKeyConflict } from '../store/runs.store';
import { WaitsStore } from '../store/waits.store';
import { retryDeadlocks, type Queryable } from '../store/db';
import { inTxOrAlone, inTxOrOwn, onCommit, type CallerTx } from '../store/caller-tx';
import { countTriggerOutcomes } from './trigger-outcomes';
import { Starter } from './starter';

/** Longest cancel reason, in bytes of UTF-8. */
const MAX_REASON_BYTES = 1_000;

/**
 * What an operator does to a run: `cancel`, `retry`, `rerun`, `releaseKey`. Each may be given a
 * caller's transaction (`tx`, internal: the dashboard's, which records the action in it): it is then
 * done in it (what it may try again, in savepoints of it), and counted once it committed.
 */
@Injectable()
export class RunAdmin {
  private readonly logger = new Logger(LOG_CONTEXT);

  constructor(
    private readonly connection: DurableConnection,
    private readonly registry: WorkflowRegistry,
    private readonly runs: RunsStore,
    private readonly activity: ActivityStore,
    private readonly waits: WaitsStore,
    private readonly starter: Starter,
  ) {}

  /**
   * Cancels a run that is still going: it is `cancelled` at once, a running step sees `ctx.signal`
   * abort at the node's next heartbeat, and no later step starts. A finished run is left as it is.
   * `reason`: a string of 1 to {@link MAX_REASON_BYTES} bytes, or null/undefined for none.
   */
  async cancel(runId: string, given?: { reason?: string } | null, tx?: CallerTx): Promise<void> {
    const options = callOptions('cancel', given, ['reason']);
    const reason = options.reason ?? null;
    assertValid('cancel', [reason === null ? undefined : textProblem(reason, 'reason', MAX_REASON_BYTES)]);
    const { runs } = this;
    const q = tx?.q ?? this.connection.db;
    // the row alone: a parent's child ids are not needed to cancel it (its children are cancelled by a trigger)
    const row = isUuid(runId) ? await runs.getRow(q, runId) : undefined;
    if (!row) throw new RunNotFoundError(runId);
    const error = { name: 'CancelledError', code: 'cancelled', message: reason ?? 'cancelled' };
    // unfinished children are cancelled with it (trigger runs_cancel_children, same statement);
    // a deadlock with a child finishing at that moment is retried (in a caller's transaction, from a savepoint)
    const cancel = (on: Queryable) => runs.cancel(on, runId, reason, error);
    const ended = await retryDeadlocks(() => inTxOrAlone(this.connection.db, tx, cancel));
    if (ended.runs.length > 0) {
      // counted once the cancel committed: the run, then a run waiting behind it that took its key,
      // its children and flow dependants the triggers cancelled (in a caller's transaction, read on it first)
      onCommit(tx, () => emitRunFinished(row.workflow, 'cancelled'));
      return countTriggerOutcomes(this.activity, this.logger, this.connection.db, ended.tx, tx);
    }
    const now = await runs.getRow(q, runId);
    if (now?.status === 'compensating') throw new NotCancellableError(runId, now.status);
  }

  /** Resumes a failed run at its failed step (taking its key back if a newer run let it go). */
  async retry(runId: string, tx?: CallerTx): Promise<void> {
    // a start may commit a holder of the free key between the holder check and the take: the
    // take is then refused (nothing written) and the decision is made again against that holder
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.retryOnce(runId, tx);
      } catch (err) {
        if (!isKeyConflict(err)) throw err;
        if (attempt === MAX_HANDOFFS) throw new KeyContendedError();
      }
    }
  }

  private async retryOnce(runId: string, tx: CallerTx | undefined): Promise<void> {
    const { runs, registry } = this;
    const retaken = await inTxOrOwn(this.connection.db, tx, async (q) => {
      const row = isUuid(runId) ? await runs.get(q, runId, true) : undefined;
      if (!row) throw new RunNotFoundError(runId);
      if (row.pruned_at) throw RunNotFoundError.pruned(runId);
      if (row.status !== 'failed') throw new NotFailedError(runId, row.status);
      if (row.key !== null && !row.holds_key) {
        // taking the key back follows the workflow's reuse rule, which only its definition holds
        const def = registry.find(row.workflow);
        if (!def) throw new UnknownWorkflowError(row.workflow, `retrying run ${runId}, whose key a newer run took, by the workflow's reuse rule`);
        const holder = await runs.lockHolder(q, row.workflow, row.key);
        const decision = decideStart(def.reuse, 'error', holder && { status: holder.status, pickedUp: holder.picked_up });
        if (decision.action !== 'create') throw new KeyTakenError(holder!.id, row.key, row.workflow);
        if (holder) await runs.dropKey(q, holder.id);
        await runs.takeKey(q, runId);
        await this.activity.record(q, 'key_retaken', runId, row.workflow, row.key, { from: holder?.id ?? null });
      }
      await this.waits.resetForRetry(q, runId); // a wait whose timeout failed the step, or a failed child, is tried anew
      await runs.retry(q, runId);
      return row.key !== null && !row.holds_key ? row.workflow : undefined;
    });
    if (retaken !== undefined) onCommit(tx, () => emitKeyMetric('key_retaken', retaken)); // counted once the retry committed
  }

  /** Starts a fresh copy of a finished run (same workflow, key and priority; `input` replaces the input). */
  async rerun(runId: string, given?: { input?: unknown } | null, tx?: CallerTx): Promise<StartResult> {
    const options = callOptions('rerun', given, ['input']);
    const row = isUuid(runId) ? await this.runs.getRow(tx?.q ?? this.connection.db, runId) : undefined;
    if (!row) throw new RunNotFoundError(runId);
    if (!isFinished(row.status)) throw new NotFinishedError(runId);
    if (row.pruned_at && !('input' in options)) throw RunNotFoundError.pruned(runId, 'release its key (releaseKey) and pass { input } to rerun it');
    const input = 'input' in options ? options.input : row.input;
    return this.starter.start(row.workflow, input, { key: row.key, onDuplicate: 'error', priority: row.priority }, { rerun: true, tx });
  }

  /**
   * Lets a finished run's key go (even under `reuse: 'never'`), so the item can be processed again
   * on purpose; the run keeps its history and its key value. `by` (who released it, 1–255 bytes) is
   * recorded in the `key_released` event (null when not given).
   */
  async releaseKey(runId: string, options?: { by?: string } | null, tx?: CallerTx): Promise<void> {
    const { by } = callOptions('releaseKey', options, ['by']);
    assertValid('releaseKey', [by === undefined || by === null ? undefined : nameProblem(by, 'by')]);
    const { runs, activity } = this;
    const workflow = await inTxOrOwn(this.connection.db, tx, async (q) => {
      const row = isUuid(runId) ? await runs.get(q, runId, true) : undefined;
      if (!row) throw new RunNotFoundError(runId);
      if (!isFinished(row.status)) throw new NotFinishedError(runId);
      if (!row.holds_key) throw new NoKeyError(runId);
      await runs.dropKey(q, runId);
      await activity.record(q, 'key_released', runId, row.workflow, row.key, { by: by ?? null });
      return row.workflow;
    });
    onCommit(tx, () => emitKeyMetric('key_released', workflow)); // counted once the release committed
  }
}
