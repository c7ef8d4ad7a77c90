import type { RunInfo } from '../domain/run-info';

/** Why a flow node was cancelled before it ran: what happened to one of its deps. */
export type FlowCancelReason = 'cancelled' | 'failed' | 'deleted';

/**
 * Implemented by a workflow class that wants to know when one of its flow nodes was cancelled
 * because a dep was cancelled, failed or deleted (its steps never ran). Called once per such node,
 * by the maintenance pass of a worker node that has the workflow registered.
 */
export interface OnFlowCancelled {
  afterCancelled(reason: FlowCancelReason, run: RunInfo): void | Promise<void>;
}
