import type { Logger } from '@nestjs/common';
import type { Queryable } from '../store/db';
import type { RunsStore, Transition } from '../store/runs.store';

interface Pending {
  t: Transition;
  resolve: (owned: boolean) => void;
}

/** Most transitions written by one statement. */
const MAX_BATCH = 1_000;
/** Statements in flight at once. */
const MAX_IN_FLIGHT = 2;

/**
 * Group commit of run transitions (checkpoints, completions, failures, retries) across runs: while a
 * statement is in flight, new transitions queue and go out together in the next one. One run waits
 * for at most one round trip; many runs share it. A failed write is retried with backoff until it
 * succeeds (each transition is conditioned on its lease epoch, so a retry never writes twice).
 */
export class TransitionBatcher {
  private queue: Pending[] = [];
  private inFlight = 0;
  private idle: (() => void)[] = [];

  constructor(
    private readonly q: Queryable,
    private readonly runs: RunsStore,
    private readonly logger: Logger,
  ) {}

  /** Queues a transition; resolves true when written, false when the execution no longer owned the run. */
  submit(t: Transition): Promise<boolean> {
    return new Promise((resolve) => {
      this.queue.push({ t, resolve });
      this.pump();
    });
  }

  /** Resolves once nothing is queued or in flight. */
  drained(): Promise<void> {
    if (this.queue.length === 0 && this.inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => this.idle.push(resolve));
  }

  private pump(): void {
    while (this.inFlight < MAX_IN_FLIGHT && this.queue.length > 0) {
      const batch = this.queue.splice(0, MAX_BATCH);
      this.inFlight++;
      void this.write(batch).finally(() => {
        this.inFlight--;
        this.pump();
        if (this.queue.length === 0 && this.inFlight === 0) this.idle.splice(0).forEach((f) => f());
      });
    }
  }

  private async write(batch: Pending[]): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        const owned = await this.runs.transition(this.q, batch.map((p) => p.t));
        for (const p of batch) p.resolve(owned.has(p.t.id));
        return;
      } catch (err) {
        const delay = Math.min(5_000, 50 * 2 ** attempt);
        this.logger.warn(`writing ${batch.length} run transition(s) failed (${(err as Error).message}); retrying in ${delay}ms`);
        await new Promise((r) => setTimeout(r, delay));
      }
    }
  }
}
