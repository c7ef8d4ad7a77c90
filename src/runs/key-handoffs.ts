import type { Queryable } from '../store/db';
import type { TxMark } from '../store/activity.store';
import { emitKeyHandoffs } from '../observe/telemetry';
import type { Logger } from '@nestjs/common';
import type { ActivityStore } from '../store/activity.store';

/**
 * Counts `durable.key.handoff` for the runAgain hand-offs the key trigger (`runs_key_handoff`) made
 * in transaction `tx`, in which key holders ended (a worker's transition, `cancel()`, the timeout
 * sweep). They are read from the activity rows the trigger wrote in that transaction, so a waiting
 * run a concurrent start added while the statement queued on the holder's lock is counted too.
 * Call after the statement committed (or on the connection of the transaction it ran in); a
 * failure to read them is logged, never thrown (the runs have ended either way).
 */
export async function countKeyHandoffs(activity: ActivityStore, logger: Logger, q: Queryable, tx: TxMark | null): Promise<void> {
  if (!tx) return;
  try {
    emitKeyHandoffs(await activity.runAgainHandoffs(q, tx));
  } catch (err) {
    logger.warn(`counting the key hand-offs of ended runs failed: ${(err as Error).message}`);
  }
}
