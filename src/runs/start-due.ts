import type { ValidationError } from 'class-validator';
import { parseStoredMs } from '../domain/duration';
import { EARLIEST_ISO_TIME_MS, LATEST_TIME_MS } from '../domain/time-bounds';
import { problem } from '../domain/validation';

/** A start's due time as the start statement takes it. */
export interface DueAt {
  /** A given time (ISO). */
  run_at: string | null;
  /** From now on the database's clock. */
  delay_ms: number | null;
}

/**
 * When a start is due: `run_at` (a given time) or `delay_ms` (from now on the database's clock), or
 * neither (now). A problem of `runAt` or `delay` goes to `problems`, named after `prefix` (a
 * `startMany` item's `items[i].`); so does either of them on a `debounced` start (a keyed start of
 * a debounced workflow is due when its period ends).
 */
export function dueAt(runAt: unknown, delay: unknown, debounced: boolean, problems: (ValidationError | undefined)[], prefix = ''): DueAt {
  const none = { run_at: null, delay_ms: null };
  const given = (v: unknown) => v !== undefined && v !== null;
  if (debounced && (given(runAt) || given(delay))) {
    const name = `${prefix}${given(runAt) ? 'runAt' : 'delay'}`;
    const message = `${name}: a keyed start of a debounced workflow is due when its period ends; runAt and delay do not apply`;
    problems.push(problem(name, given(runAt) ? runAt : delay, 'debounced', message));
    return none;
  }
  if (given(runAt) && given(delay)) {
    problems.push(problem('delay', delay, 'oneOf', 'give runAt or delay, not both'));
    return none;
  }
  if (runAt !== undefined && runAt !== null) {
    const ms = runAt instanceof Date ? runAt.getTime() : NaN;
    // sent as an ISO time: Postgres reads those of the years 1 to 9999 only
    if (!(ms >= EARLIEST_ISO_TIME_MS && ms <= LATEST_TIME_MS)) {
      problems.push(problem(`${prefix}runAt`, runAt, 'isDate', `${prefix}runAt must be a valid Date of the years 1 to 9999`));
      return none;
    }
    return { run_at: (runAt as Date).toISOString(), delay_ms: null };
  }
  if (delay !== undefined && delay !== null) {
    const parsed = parseStoredMs(delay, 'delay');
    if (!parsed.problem) return { run_at: null, delay_ms: parsed.ms };
    problems.push(parsed.problem);
  }
  return none;
}
