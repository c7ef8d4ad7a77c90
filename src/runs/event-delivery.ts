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
 * - the run waits for `name` → the event is stored as received and the run becomes pending: `'delivered'`;
 * - else, while the run is going, with `buffer` — or whatever `buffer` says when its running step
 *   has reached that wait and is suspending on it — the event is kept (the newest kept one is what
 *   a later wait gets; after the run got one for that name, later ones are kept but never read): `'kept'`;
 * - else (finished, or not buffered): `'dropped'`.
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
  if (isFinished(run.status)) return 'dropped';
  const mark = inboxMark(kind, name);
  if (run.status === 'waiting' && run.wait_kind === kind && run.wait_name === name) {
    await events.insert(q, runId, kind, name, payload, true);
    await events.wake(q, runId, mark);
    return 'delivered';
  }
  if (options.buffer || (await events.waitOpen(q, runId, kind, name))) {
    await events.insert(q, runId, kind, name, payload, false);
    await events.mark(q, runId, mark);
    return 'kept';
  }
  return 'dropped';
}
