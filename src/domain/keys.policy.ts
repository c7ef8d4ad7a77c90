/**
 * The key rules of docs/keys.md as data. PURE: no I/O; the start algorithm asks it what to
 * do once it holds the lock on the key's holder. Each table below is docs/keys.md's, row for row.
 */
import { FINISHED_STATUSES, type RunStatus } from './run-info';

/** When a finished run's key may be taken by a new start (spec: "Choosing reuse"). */
export type ReusePolicy = 'afterClose' | 'afterFailure' | 'never';

/** What a start does when the key is taken (spec: "What a Duplicate Returns"). */
export type OnDuplicate = 'useExisting' | 'error' | 'cancelExisting' | 'runAgain' | { sendEvent: string };

/** docs/keys.md's defaults: `reuse` when a workflow sets none, `onDuplicate` when neither it nor the call does. */
export const DEFAULT_REUSE: ReusePolicy = 'afterClose';
export const DEFAULT_ON_DUPLICATE: OnDuplicate = 'useExisting';

/** How many times a key may change hands under one start (or retry, or flow start) before it gives up. */
export const MAX_HANDOFFS = 3;

/** docs/keys.md's three kinds of holder status ("Choosing reuse" table rows). */
export type HolderState = 'going' | 'completed' | 'failedOrCancelled';

/** Which row of the reuse table a holder's status is in. */
export const HOLDER_STATE: Record<RunStatus, HolderState> = {
  pending: 'going',
  running: 'going',
  waiting: 'going',
  compensating: 'going',
  completed: 'completed',
  failed: 'failedOrCancelled',
  cancelled: 'failedOrCancelled',
  compensated: 'failedOrCancelled',
  compensation_failed: 'failedOrCancelled',
};

/** docs/keys.md's "Choosing reuse" table: is the key taken or free for a new start? */
export const REUSE_TABLE: Record<HolderState, Record<ReusePolicy, 'taken' | 'free'>> = {
  going: { afterClose: 'taken', afterFailure: 'taken', never: 'taken' },
  completed: { afterClose: 'free', afterFailure: 'taken', never: 'taken' },
  failedOrCancelled: { afterClose: 'free', afterFailure: 'free', never: 'taken' },
};

/** What a start does about the key. */
export type KeyDecision =
  /** No holder, or reuse frees the finished holder's key: hand it over and create the run. */
  | { action: 'create'; handOffFrom?: string }
  /** Return the holder (`useExisting`). */
  | { action: 'useExisting' }
  /** Refuse with `KeyTakenError(holder)`. */
  | { action: 'reject' }
  /** Cancel the going holder and create the new run with the key, in one step. */
  | { action: 'cancelExisting' }
  /** Leave (or update) one run waiting behind the holder. */
  | { action: 'runAgain' }
  /** The holder has not been picked up: it takes the newer input itself. */
  | { action: 'replaceInput'; outcome: 'runAgain' | 'debounced' }
  /** Send the input to the going holder as event `name`. */
  | { action: 'sendEvent'; name: string };

/** The mode of `onDuplicate` without its payload. */
export type DuplicateMode = 'useExisting' | 'error' | 'cancelExisting' | 'runAgain' | 'sendEvent';

/** docs/keys.md's "What a Duplicate Returns" table, for a holder that is still going. */
export const GOING_HOLDER_TABLE: Record<DuplicateMode, KeyDecision['action']> = {
  useExisting: 'useExisting',
  error: 'reject',
  cancelExisting: 'cancelExisting',
  runAgain: 'runAgain',
  sendEvent: 'sendEvent',
};

/**
 * For a finished holder that reuse keeps: `useExisting` returns it, everything else is refused
 * ("there's nothing to cancel or send to").
 */
export const KEPT_FINISHED_HOLDER_TABLE: Record<DuplicateMode, KeyDecision['action']> = {
  useExisting: 'useExisting',
  error: 'reject',
  cancelExisting: 'reject',
  runAgain: 'reject',
  sendEvent: 'reject',
};

/** The mode of an `onDuplicate` value. */
export const duplicateMode = (d: OnDuplicate): DuplicateMode => (typeof d === 'string' ? d : 'sendEvent');

/** The holder as the policy sees it. */
export interface HolderView {
  status: RunStatus;
  /** A worker has started it at least once. */
  pickedUp: boolean;
  /** It is a debounced run (in its debounce wait while pending and not picked up). */
  debouncing?: boolean;
}

/** Decides a start against the current holder of its key (undefined: nobody holds it). */
export function decideStart(reuse: ReusePolicy, onDuplicate: OnDuplicate, holder: HolderView | undefined, holderId?: string): KeyDecision {
  if (!holder) return { action: 'create' };
  const state = HOLDER_STATE[holder.status];
  if (REUSE_TABLE[state][reuse] === 'free') return { action: 'create', handOffFrom: holderId };
  const mode = duplicateMode(onDuplicate);
  if (state !== 'going') return { action: KEPT_FINISHED_HOLDER_TABLE[mode] } as KeyDecision;
  if (holder.debouncing && holder.status === 'pending' && !holder.pickedUp) return { action: 'replaceInput', outcome: 'debounced' };
  const action = GOING_HOLDER_TABLE[mode];
  if (action === 'cancelExisting' && holder.status === 'compensating') return { action: 'reject' };
  // not started: pending, or a flow node waiting for its dependencies, and never picked up
  if (action === 'runAgain' && (holder.status === 'pending' || holder.status === 'waiting') && !holder.pickedUp) {
    return { action: 'replaceInput', outcome: 'runAgain' };
  }
  if (action === 'sendEvent') return { action, name: (onDuplicate as { sendEvent: string }).sendEvent };
  return { action } as KeyDecision;
}

/**
 * The holder's final statuses after which a run waiting behind it (`runAgain`) takes the key; after
 * the others reuse keeps the key and the waiting run is cancelled. Read off {@link REUSE_TABLE}.
 */
export function statusesThatFreeKey(reuse: ReusePolicy): RunStatus[] {
  return FINISHED_STATUSES.filter((s) => REUSE_TABLE[HOLDER_STATE[s]][reuse] === 'free');
}

/**
 * The holder statuses for which a start's answer is settled whatever the holder's pick-up state
 * (and, for a `debounced` workflow, its debounce state): `useExisting` (return the holder) or `reject` (KeyTakenError). A start can answer
 * those in one statement, without holding the holder's lock across round trips.
 */
export function settledDuplicateStatuses(reuse: ReusePolicy, onDuplicate: OnDuplicate, debounced: boolean): { useExisting: RunStatus[]; reject: RunStatus[] } {
  // the answer depends on the mode, not on a sendEvent's name: computed once per combination
  const memo = `${reuse}/${typeof onDuplicate === 'string' ? onDuplicate : 'sendEvent'}/${debounced}`;
  let out = SETTLED.get(memo);
  if (!out) SETTLED.set(memo, (out = computeSettled(reuse, onDuplicate, debounced)));
  return out;
}

const SETTLED = new Map<string, { useExisting: RunStatus[]; reject: RunStatus[] }>();

function computeSettled(reuse: ReusePolicy, onDuplicate: OnDuplicate, debounced: boolean) {
  const out = { useExisting: [] as RunStatus[], reject: [] as RunStatus[] };
  const debouncing = debounced ? [false, true] : [false];
  for (const status of Object.keys(HOLDER_STATE) as RunStatus[]) {
    const actions = new Set(
      [false, true].flatMap((pickedUp) => debouncing.map((d) => decideStart(reuse, onDuplicate, { status, pickedUp, debouncing: d }).action)),
    );
    const [only] = actions;
    if (actions.size === 1 && (only === 'useExisting' || only === 'reject')) out[only].push(status);
  }
  return out;
}
