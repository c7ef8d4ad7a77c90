import type { Logger } from '@nestjs/common';
import { CancelledError } from '../errors';
import type { Queryable } from '../store/db';
import type { RunsStore } from '../store/runs.store';
import type { Execution } from './execution';

/** A run claimed ahead that has not started after this long is given back (the node's steps got slow). */
const QUEUED_TTL_MS = 1_000;

/** A run's lease: its id and the epoch of the claim an execution holds. */
export const leaseOf = (e: Execution) => ({ id: e.runId, epoch: e.epoch });

/**
 * Gives runs a node holds but will not run back to pending, for any node to claim: a give-back
 * costs no attempt (the claim's is returned).
 */
export class GiveBack {
  constructor(
    private readonly runs: RunsStore,
    private readonly db: Queryable,
    private readonly nodeId: string,
    private readonly logger: Logger,
  ) {}

  /**
   * Releases `execs` (already lost here), logging it as `what` at `level`; false when the release
   * failed (a warning: the node's next heartbeat gives them back, or, once it has stopped, the
   * recovery of its runs after `nodeTimeout`).
   */
  async release(execs: readonly Execution[], what: string, level: 'log' | 'debug'): Promise<boolean> {
    if (execs.length === 0) return true;
    try {
      await this.runs.release(this.db, this.nodeId, execs.map(leaseOf));
      this.logger[level](`${what}: gave back ${execs.length} run(s) for any node to claim (no attempt counted)`);
      return true;
    } catch (err) {
      this.logger.warn(
        `${what}: could not release ${execs.length} run(s) (${(err as Error).message}); the node's next heartbeat gives them back, or, once it has stopped, they are recovered after nodeTimeout`,
      );
      return false;
    }
  }

  /** Gives back the runs claimed ahead among `running` that have waited {@link QUEUED_TTL_MS} without a slot (the steps before them turned slow). */
  async stale(running: Iterable<Execution>): Promise<void> {
    const now = Date.now();
    const stale = [...running].filter((e) => e.queued && now - e.claimedAt > QUEUED_TTL_MS);
    if (stale.length === 0) return;
    const reason = new CancelledError('given back: it waited too long for a slot on this node');
    for (const e of stale) e.lose(reason);
    await this.release(stale, 'claimed ahead, waited over a second for a slot', 'debug');
  }
}
