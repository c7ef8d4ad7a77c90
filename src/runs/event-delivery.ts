import type { Queryable } from '../store/db';
import { inboxMark, type EventKind, type EventsStore } from '../store/events.store';
import { isFinished } from '../domain/run-info';

/** What `sendEvent` did with the event. */
export type SendEventOutcome = 'delivered' | 'kept' | 'dropped';

/** Options of {@link deliverEvent}. */
export interface DeliverOptions {
  /** Keep the event when the run is not waiting for it (it gets it when it waits). Default false. */
  buffer?: boolean;
  /** `'event'` (sendEvent, default) or `'input'` (provideInput). */
  kind?: EventKind;
}

/**
 * Delivers an event to a run, on `q` (a transaction: the caller's — e.g. a start's for
 * `onDuplicate: { sendEvent }` — or one of its own). Row-locks the run, so "is it waiting for it?"
 * and the status change are atomic:
 * - the run waits for `name` and that wait's timeout has not passed → the event is stored as
 *   received and the run becomes pending: `'delivered'`;
 * - else, while the run is going, with `buffer` — or whatever `buffer` says when its running step
 *   has reached that wait, is suspending on it and its timeout has not passed — the event is kept
 *   (the newest kept one is what a later wait gets, if it was kept before that wait's timeout
 *   passed; after the run got one for that name, later ones are kept but never read): `'kept'`;
 * - else (finished, past its workflow deadline, or not buffered): `'dropped'`.
 * The send's moment is when the run's lock was asked for (see `EventsStore.lockRun`).
 * Resolves undefined when the run does not exist.
 */
export async function deliverEvent(
  events: EventsStore,
  q: Queryable,
  runId: string,
  name: string,
  payload: unknown,
  options: DeliverOptions = {},
): Promise<SendEventOutcome | undefined> {
  const kind = options.kind ?? 'event';
  const run = await events.lockRun(q, runId);
  if (!run) return undefined;
  // a run past its workflow deadline times out: it will not wait for anything again
  if (isFinished(run.status) || run.past_deadline) return 'dropped';
  const mark = inboxMark(kind, name);
  if (run.status === 'waiting' && run.wait_kind === kind && run.wait_name === name && run.timer_open) {
    await events.insert(q, runId, kind, name, payload, true, run.at);
    await events.wake(q, runId, mark);
    return 'delivered';
  }
  // a wait whose timeout has passed takes no event sent since, even when no worker has got to it yet
  if (options.buffer || (await events.waitOpen(q, runId, kind, name, run.at))) {
    await events.insert(q, runId, kind, name, payload, false, run.at);
    await events.mark(q, runId, mark);
    return 'kept';
  }
  return 'dropped';
}
