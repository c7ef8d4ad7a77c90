import type { Logger } from '@nestjs/common';
import { sqlState, type Queryable } from '../store/db';
import type { RunsStore } from '../store/runs.store';
import type { Transition } from '../store/runs.types';
import type { TxMark } from '../store/activity.store';
import { GroupCommit } from '../core/group-commit';

interface Pending {
  t: Transition;
  resolve: (owned: boolean) => void;
  /** Set on a failure written in place of a refused transition: with Postgres' reason, or without. */
  replaces?: 'detailed' | 'bare';
}

/** Error code of a run failed because its outcome could not be stored. */
const UNSTORABLE = 'unstorable';
/** The message of that failure (with Postgres' reason after it, unless that was refused too). */
const UNSTORABLE_MESSAGE = "the run's outcome could not be stored";

/** Most transitions written by one statement. */
const MAX_BATCH = 1_000;
/** Statements in flight at once. */
const MAX_IN_FLIGHT = 2;

/**
 * Group commit of run transitions (checkpoints, completions, failures, retries) across runs: while a
 * statement is in flight, new transitions queue and go out together in the next one. One run waits
 * for at most one round trip; many runs share it. A failed write is retried with backoff until it
 * succeeds (each transition is conditioned on its lease epoch, so a retry never writes twice); a
 * batch cut off by a statement or lock timeout is written in halves, and a value Postgres refuses
 * fails only its own run.
 */
export class TransitionBatcher {
  private readonly group = new GroupCommit<Pending>((batch) => this.write(batch), MAX_BATCH, MAX_IN_FLIGHT);
  /** Set once a shutdown drained (or stopped waiting): failing writes stop retrying. */
  private givenUp = false;

  constructor(
    private readonly q: Queryable,
    private readonly runs: RunsStore,
    /** The node whose executions these are (recorded with each step attempt). */
    private readonly nodeId: string,
    private readonly logger: Logger,
    private readonly on: {
      /**
       * Called (and awaited, after the batch's transitions resolved) after a batch whose transaction
       * the triggers may have acted in (key holders, parents or flow nodes ended): counts the key
       * hand-offs and the runs they cancelled.
       */
      triggersActed: (tx: TxMark) => Promise<void>;
      /** Called when not even a failure without details could be stored for a run: it stays as it is, held by this node. */
      unstorable: (run: { id: string; epoch: number }) => void;
    },
  ) {}

  /** Queues a transition; resolves true when written, false when the execution no longer owned the run. */
  submit(t: Transition): Promise<boolean> {
    return new Promise((resolve) => void this.group.push({ t, resolve }));
  }

  /**
   * Shutdown: resolves once nothing is queued or in flight, or after `withinMs`. From then on a
   * failing write (one still in flight, or a late one) stops retrying and resolves as not written
   * (its run is recovered like a dead node's): the pool is about to close.
   */
  async drained(withinMs = Infinity): Promise<void> {
    const idle = await this.group.whenIdle(withinMs);
    this.givenUp = true;
    if (!idle) for (const p of this.group.takeQueued()) p.resolve(false);
  }

  private async write(batch: Pending[]): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        const { notApplied, tx } = await this.runs.transition(
          this.q,
          batch.map((p) => p.t),
          this.nodeId,
        );
        // the executions go on at once; the read-back of what the triggers did (a keyed run's end) is
        // not theirs to wait for
        for (const p of batch) p.resolve(!notApplied.has(p.t));
        if (tx) await this.on.triggersActed(tx);
        return;
      } catch (err) {
        if (isDataException(err)) return this.isolate(batch, err);
        // a batch cut off by a timeout: its halves are tried on their own (one slow row holds up fewer)
        if (isTimeout(err) && batch.length > 1 && !this.givenUp) {
          const half = batch.length >> 1;
          this.logger.warn(`writing ${batch.length} run transition(s) timed out (${(err as Error).message}); writing them in two halves`);
          await Promise.all([this.write(batch.slice(0, half)), this.write(batch.slice(half))]);
          return;
        }
        if (this.givenUp) {
          for (const p of batch) p.resolve(false);
          return;
        }
        const delay = Math.min(5_000, 50 * 2 ** attempt);
        this.logger.warn(`writing ${batch.length} run transition(s) failed (${(err as Error).message}); retrying in ${delay}ms`);
        await new Promise((r) => setTimeout(r, delay));
      }
    }
  }

  /**
   * A value Postgres refuses (see {@link isDataException}) must not hold up the other runs of the batch: write
   * each alone, and a transition refused on its own becomes a failure of its run without the value.
   * Should that failure be refused too (its message carries Postgres' reason), a failure with no
   * detail at all is written instead; only if even that is refused does the run stay as it is (held
   * by this node, see `on.unstorable`).
   */
  private async isolate(batch: Pending[], err: unknown): Promise<void> {
    if (batch.length > 1) {
      await Promise.all(batch.map((p) => this.write([p])));
      return;
    }
    const [p] = batch;
    const replaced = p.replaces;
    const reason = (err as Error).message;
    if (replaced === 'bare') {
      this.logger.error(`run ${p.t.id}: even a failure without details could not be stored (${reason}); it stays running, held by this node until it stops`);
      this.on.unstorable(p.t);
      return p.resolve(false);
    }
    this.logger.error(
      replaced
        ? `run ${p.t.id}: its failure could not be stored (${reason}); failing it without details`
        : `run ${p.t.id}: its ${p.t.status} transition could not be stored (${reason}); failing the run`,
    );
    const { tried_step, tried_attempt, tried_from_ms, tried_to_ms } = p.t;
    const failed: Transition = {
      id: p.t.id,
      epoch: p.t.epoch,
      status: 'failed',
      final: true,
      // the attempt whose outcome was refused stays in the run's history, as failed
      ...(tried_step === undefined ? {} : { tried_step, tried_attempt, tried_status: 'failed', tried_from_ms, tried_to_ms }),
      error: { name: 'DurableValidationError', code: UNSTORABLE, message: `${UNSTORABLE_MESSAGE}${replaced ? '' : `: ${reason}`}` },
    };
    await this.write([{ t: failed, resolve: () => p.resolve(false), replaces: replaced ? 'bare' : 'detailed' }]);
  }
}

/**
 * Postgres refused the values themselves, so retrying them together cannot succeed: SQLSTATE class
 * 22 (data exception), 54 (program limit exceeded, e.g. a batch's jsonb over 255 MB), P0 (raised by
 * a PL/pgSQL trigger, say a rule of the application's own) or 23 (a check, not-null or foreign key
 * constraint). A unique or exclusion violation (23505, 23P01) is not among them: it can come from a
 * race with another transaction, and is retried.
 */
function isDataException(err: unknown): boolean {
  const state = sqlState(err);
  if (state === undefined || state === '23505' || state === '23P01') return false;
  return ['22', '54', 'P0', '23'].includes(state.slice(0, 2));
}

/** A statement cancelled by `statement_timeout` (57014) or that gave up waiting for a lock (55P03). */
function isTimeout(err: unknown): boolean {
  const state = sqlState(err);
  return state === '57014' || state === '55P03';
}
