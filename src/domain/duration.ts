import type { ValidationError } from 'class-validator';
import { DurableValidationError } from '../errors';
import { LATEST_TIME_MS } from './time-bounds';
import { problem } from './validation';

/** Milliseconds, or a string such as `'500ms'`, `'30s'`, `'5m'`, `'2h'`, `'7d'`. */
export type Duration = number | string;

const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const DURATION_RE = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)\s*$/;

/** Parses a {@link Duration} to whole milliseconds (rounded); `undefined` when it is not one. */
export function tryParseDuration(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) && value >= 0 ? Math.round(value) : undefined;
  if (typeof value !== 'string') return undefined;
  const m = DURATION_RE.exec(value);
  return m ? Math.round(Number(m[1]) * UNIT_MS[m[2]]) : undefined;
}

/**
 * The longest duration a Node.js timer can wait (2^31 − 1 ms, about 24.8 days): the bound of every
 * duration the module times in memory (step and workflow timeouts, heartbeats, polling). Durations
 * kept as times in the database (sleeps, delays, wait timeouts, retry back-offs, debounce) may be
 * longer.
 */
export const MAX_TIMER_MS = 2_147_483_647;

/**
 * Longest span of time a call may look back over or move times by (100 years of 365 days):
 * retention, `prune`'s `olderThan` and the testing kit's `skipTime`. Far inside what PostgreSQL
 * intervals and timestamps can hold (the year 4713 BC), so a longer one is refused instead of
 * failing in the database.
 */
export const MAX_SPAN_MS = 36_500 * 86_400_000;

/** A {@link Duration} parsed to milliseconds, or the problem that keeps it from being one. */
export type ParsedMs = { ms: number; problem?: undefined } | { ms?: undefined; problem: ValidationError };

/** Parses a {@link Duration} to milliseconds, or the problem naming `what` when invalid or longer than `maxMs`. */
export function parseMs(value: unknown, what = 'duration', maxMs = Infinity): ParsedMs {
  const ms = tryParseDuration(value);
  if (ms !== undefined && ms <= maxMs) return { ms };
  const message =
    ms === undefined
      ? `${what} must be milliseconds or a string like '30s', got ${String(value)}`
      : `${what} must be at most ${maxMs}ms (about ${Math.floor(maxMs / UNIT_MS.d)} days), got ${String(value)}`;
  return { problem: problem(what, value, 'isDuration', message) };
}

/**
 * Parses a {@link Duration} to milliseconds, throwing a `DurableValidationError` naming `what` when
 * invalid or longer than `maxMs`.
 */
export function toMs(value: Duration, what = 'duration', maxMs = Infinity): number {
  return msOrThrow(parseMs(value, what, maxMs));
}

/** `n` seconds in milliseconds. */
export const seconds = (n: number): number => n * UNIT_MS.s;
/** `n` minutes in milliseconds. */
export const minutes = (n: number): number => n * UNIT_MS.m;
/** `n` hours in milliseconds. */
export const hours = (n: number): number => n * UNIT_MS.h;
/** `n` days in milliseconds. */
export const days = (n: number): number => n * UNIT_MS.d;

/**
 * Parses a {@link Duration} that ends a stored time counted from now (a delay, a sleep, a wait's
 * timeout), or the problem naming `what` when invalid or when it would end after the year 9999.
 */
export function parseStoredMs(value: unknown, what: string): ParsedMs {
  const parsed = parseMs(value, what);
  if (parsed.problem || Date.now() + parsed.ms <= LATEST_TIME_MS) return parsed;
  return { problem: problem(what, value, 'isDuration', `${what} must end before the year 10000, got ${String(value)}`) };
}

/** {@link parseStoredMs}, throwing its problem as a `DurableValidationError`. */
export function toStoredMs(value: Duration, what: string): number {
  return msOrThrow(parseStoredMs(value, what));
}

/** The milliseconds of `parsed`, or its problem thrown as a `DurableValidationError`. */
function msOrThrow(parsed: ParsedMs): number {
  if (parsed.problem) throw new DurableValidationError(Object.values(parsed.problem.constraints ?? {}).join('; '), [parsed.problem]);
  return parsed.ms;
}
