import type { Logger } from '@nestjs/common';
import type { Queryable } from '../store/db';
import type { ActivityStore, TxMark } from '../store/activity.store';
import { onCommit, type CallerTx } from '../store/caller-tx';
import { emitKeyHandoffs, emitRunFinished } from '../observe/telemetry';

/**
 * Reads what the triggers did in transaction `tx`, in which runs ended (a worker's transition,
 * `cancel()`, the timeout sweep, a `cancelExisting`), and returns the counting of it:
 * `durable.key.handoff` for each runAgain hand-off of the key trigger, and `durable.run.finished`
 * (`cancelled`) for each run cancelled along with another's end — a run waiting behind a holder
 * whose reuse policy kept the key, the unfinished children of a parent, the flow nodes whose
 * dependency did not complete. Read from the rows the triggers wrote in that transaction, so a run
 * a concurrent start or flow append added while the statement queued on a lock is counted too,
 * and each once (only the statement that ended its cause marks the transaction). Read it on the
 * transaction's own connection before it ends (then count once it committed), or after it committed.
 */
export async function triggerOutcomes(activity: ActivityStore, q: Queryable, tx: TxMark | null): Promise<() => void> {
  if (!tx) return () => undefined;
  const { handedOff, cancelled } = await activity.triggerOutcomes(q, tx);
  return () => {
    for (const { workflow, n } of handedOff) emitKeyHandoffs(workflow, n);
    for (const { workflow, n } of cancelled) emitRunFinished(workflow, 'cancelled', n);
  };
}

/**
 * Counts what the triggers did in transaction `ended` (see {@link triggerOutcomes}) once it
 * committed. Outside a caller's transaction `ended` has committed: read on `db` and counted at once,
 * a failure to read logged, never thrown (the runs have ended either way). In the caller's
 * transaction `tx`: read on it before it ends and counted once it committed (never when it rolled
 * back); a failure to read is thrown, as it aborted that transaction, which can no longer commit.
 */
export async function countTriggerOutcomes(activity: ActivityStore, logger: Logger, db: Queryable, ended: TxMark | null, tx?: CallerTx): Promise<void> {
  try {
    onCommit(tx, await triggerOutcomes(activity, tx?.q ?? db, ended));
  } catch (err) {
    if (tx) throw err;
    logger.warn(`counting the runs the triggers handed keys to or cancelled failed: ${(err as Error).message}`);
  }
}
