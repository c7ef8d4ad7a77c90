import type { Queryable } from '../store/db';
import type { TxMark } from '../store/activity.store';
import { emitKeyHandoffs, emitRunFinished } from '../observe/telemetry';
import type { Logger } from '@nestjs/common';
import type { ActivityStore } from '../store/activity.store';

/**
 * Counts what the key trigger (`runs_key_handoff`) did in transaction `tx`, in which key holders
 * ended (a worker's transition, `cancel()`, the timeout sweep): `durable.key.handoff` for each
 * runAgain hand-off, and `durable.run.finished` (`cancelled`) for each run waiting behind a holder
 * that it cancelled because the reuse policy kept the key. Both are read from the rows the trigger
 * wrote in that transaction, so a waiting run a concurrent start added while the statement queued
 * on the holder's lock is counted too. Call after the statement committed (or on the connection of
 * the transaction it ran in); a failure to read them is logged, never thrown (the runs have ended
 * either way).
 */
export async function countKeyTriggerOutcomes(activity: ActivityStore, logger: Logger, q: Queryable, tx: TxMark | null): Promise<void> {
  if (!tx) return;
  try {
    const { handedOff, waitersCancelled } = await activity.keyTriggerOutcomes(q, tx);
    emitKeyHandoffs(handedOff);
    for (const workflow of waitersCancelled) emitRunFinished(workflow, 'cancelled');
  } catch (err) {
    logger.warn(`counting the key hand-offs of ended runs failed: ${(err as Error).message}`);
  }
}
