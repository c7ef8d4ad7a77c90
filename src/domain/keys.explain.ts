/**
 * Why a start would do what {@link decideStart} decides: the outcome a caller would see and the
 * rule of docs/keys.md that applied, in words. PURE: no I/O.
 */
import { decideStart, duplicateMode, HOLDER_STATE, type HolderView, type OnDuplicate, type ReusePolicy } from './keys.policy';
import type { RunStatus } from './run-info';

/** What `start` would answer: a `StartResult.outcome`, or `'error'` (it would reject with `KeyTakenError`; `KeyContendedError` is never predicted). */
export type ExplainedOutcome = 'created' | 'useExisting' | 'cancelExisting' | 'runAgain' | 'sendEvent' | 'debounced' | 'error';

/** The holder of a key as an explanation needs it. */
export interface ExplainedHolder extends HolderView {
  id: string;
  /** The run already waiting behind it (`runAgain`), if any. */
  waiterId?: string | null;
}

/** What a start would do and why (see `DurableService.explainStart`). */
export interface StartExplanation {
  outcome: ExplainedOutcome;
  /** The run the outcome names when it exists already: the holder, or the run waiting behind it. Absent when a new run would be created. */
  runId?: string;
  /** The key's holder as read (absent: nobody holds the key). */
  holder?: { id: string; status: RunStatus };
  /** The rule that applied, in words. */
  reason: string;
}

const show = (d: OnDuplicate) => (typeof d === 'string' ? `'${d}'` : `{ sendEvent: '${d.sendEvent}' }`);

/** Explains the start of a workflow with `reuse` and an effective `onDuplicate` against the key's holder (undefined: none). */
export function explainStart(reuse: ReusePolicy, onDuplicate: OnDuplicate, holder: ExplainedHolder | undefined): StartExplanation {
  const decision = decideStart(reuse, onDuplicate, holder, holder?.id);
  if (!holder) return { outcome: 'created', reason: 'nobody holds the key: a new run is created with it' };
  const seen = { id: holder.id, status: holder.status };
  const state = HOLDER_STATE[holder.status];
  const about = `the holder ${holder.id} is ${holder.status}`;
  if (decision.action === 'create') {
    return {
      outcome: 'created',
      holder: seen,
      reason: `${about}, and reuse '${reuse}' frees the key of a ${state === 'completed' ? 'completed' : 'failed or cancelled'} run: a new run takes it`,
    };
  }
  const mode = show(onDuplicate);
  if (state !== 'going') {
    const kept = `${about}, and reuse '${reuse}' keeps the key after it`;
    if (decision.action === 'useExisting')
      return { outcome: 'useExisting', runId: holder.id, holder: seen, reason: `${kept}: onDuplicate 'useExisting' returns it` };
    const why = duplicateMode(onDuplicate) === 'error' ? 'refuses the start' : 'has nothing to cancel or send to, so the start is refused';
    return { outcome: 'error', runId: holder.id, holder: seen, reason: `${kept}: onDuplicate ${mode} ${why} (KeyTakenError)` };
  }
  switch (decision.action) {
    case 'useExisting':
      return { outcome: 'useExisting', runId: holder.id, holder: seen, reason: `${about}: onDuplicate 'useExisting' returns it` };
    case 'reject':
      return duplicateMode(onDuplicate) === 'cancelExisting'
        ? {
            outcome: 'error',
            runId: holder.id,
            holder: seen,
            reason: `${about}: a compensating run cannot be cancelled, so onDuplicate 'cancelExisting' is refused (KeyTakenError)`,
          }
        : { outcome: 'error', runId: holder.id, holder: seen, reason: `${about}: onDuplicate 'error' refuses the start (KeyTakenError)` };
    case 'cancelExisting':
      return { outcome: 'cancelExisting', holder: seen, reason: `${about}: onDuplicate 'cancelExisting' cancels it and a new run takes the key` };
    case 'replaceInput':
      return decision.outcome === 'debounced'
        ? {
            outcome: 'debounced',
            runId: holder.id,
            holder: seen,
            reason: `${about} in its debounce window: it takes the new input and its window starts again`,
          }
        : { outcome: 'runAgain', runId: holder.id, holder: seen, reason: `${about} and not picked up yet: onDuplicate 'runAgain' gives it the new input` };
    case 'runAgain':
      return holder.waiterId
        ? {
            outcome: 'runAgain',
            runId: holder.waiterId,
            holder: seen,
            reason: `${about}: onDuplicate 'runAgain' gives the new input to run ${holder.waiterId}, already waiting behind it`,
          }
        : { outcome: 'runAgain', holder: seen, reason: `${about}: onDuplicate 'runAgain' leaves a new run waiting behind it, to take the key when it ends` };
    case 'sendEvent':
      return { outcome: 'sendEvent', runId: holder.id, holder: seen, reason: `${about}: onDuplicate ${mode} sends it the input as event '${decision.name}'` };
  }
}
