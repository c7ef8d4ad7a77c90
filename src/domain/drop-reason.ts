import { isFinished, type RunStatus } from './run-info';

/** What is known of a run that dropped an event or input sent to it, for {@link dropReason}. */
export interface DroppedBy {
  /** The run's status. */
  status: RunStatus;
  /** Its workflow deadline had passed. */
  pastDeadline: boolean;
  /**
   * The event's name when it was an event sent without `buffer`; undefined for an input or a
   * buffered event, which a going run keeps until its workflow deadline passes.
   */
  unbufferedEvent?: string;
}

/**
 * Why a run dropped an event or input (`SendEventOutcome` `'dropped'`), worded to follow
 * `run <id> `: `had already finished (completed)`; `is past its workflow deadline (waiting)`; or,
 * for an event sent without `buffer` to a run going on, that it was not waiting for it, with the
 * hint to send it with `buffer` (kept until the run waits for it; the dashboard's checkbox). A run still going that keeps
 * whatever it is sent (an input, a buffered event) drops it only past its workflow deadline.
 */
export function dropReason({ status, pastDeadline, unbufferedEvent }: DroppedBy): string {
  if (isFinished(status)) return `had already finished (${status})`;
  if (unbufferedEvent === undefined || pastDeadline) return `is past its workflow deadline (${status})`;
  const event = `event "${unbufferedEvent}"`;
  const notWaiting = status === 'waiting' ? `is waiting, but not for ${event}` : `is ${status} and not waiting for ${event}`;
  return `${notWaiting}; send it with buffer to keep it until the run waits for it`;
}
