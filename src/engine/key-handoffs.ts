import type { Queryable } from '../store/db';
import type { EndedRuns } from '../store/runs.store';
import { emitKeyHandoffs } from '../observe/telemetry';
import type { DurableCore } from './durable.core';

/**
 * Counts `durable.key.handoff` for the runAgain hand-offs the key trigger (`runs_key_handoff`) made
 * when a statement other than a worker's transition ended key holders (`cancel()`, the timeout
 * sweep). They are read from the activity rows the trigger wrote in that statement's transaction,
 * so a waiting run a concurrent start added while the statement queued on the holder's lock is
 * counted too. Call after the statement committed, on the connection it ran on; a failure to read
 * them is logged, never thrown (the runs have ended either way).
 */
export async function countKeyHandoffs(core: DurableCore, q: Queryable, ended: EndedRuns): Promise<void> {
  if (!ended.tx) return;
  try {
    emitKeyHandoffs(await core.activity.runAgainHandoffs(q, ended.tx));
  } catch (err) {
    core.logger.warn(`counting the key hand-offs of ended runs failed: ${(err as Error).message}`);
  }
}
