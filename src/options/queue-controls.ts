import type { ValidationError } from 'class-validator';
import { tryParseDuration, type Duration } from '../domain/duration';
import { optionNames, problem, unknownOptionProblems } from '../domain/validation';

/** How runs are grouped for a limit: by their key, or by a function of their input. */
export type GroupBy = 'key' | ((input: never) => string);

/** `@Workflow({ concurrency })`: at most `limit` runs `running` at once across the cluster, or per group. */
export type ConcurrencyOption = number | { limit: number; by: GroupBy };

/** `@Workflow({ rateLimit })`: at most `limit` runs begin in any window of `period`, across the cluster or per group. */
export interface RateLimitOption {
  limit: number;
  period: Duration;
  by?: GroupBy;
}

/** Highest `limit` of a concurrency or rate limit. */
export const MAX_CONTROL_LIMIT = 1_000_000;

/** The option names of `concurrency` (object form) and `rateLimit`. */
export const CONCURRENCY_OPTION_NAMES = optionNames<{ limit: number; by: GroupBy }>({ limit: true, by: true });
export const RATE_LIMIT_OPTION_NAMES = optionNames<RateLimitOption>({ limit: true, period: true, by: true });

const limitProblem = (value: unknown, property: string) =>
  Number.isInteger(value) && (value as number) >= 1 && (value as number) <= MAX_CONTROL_LIMIT
    ? undefined
    : problem(property, value, 'isLimit', `${property} must be an integer from 1 to ${MAX_CONTROL_LIMIT}`);

const byProblem = (value: unknown, property: string, required: boolean) =>
  (value === undefined && !required) || value === 'key' || typeof value === 'function'
    ? undefined
    : problem(property, value, 'isGroupBy', `${property} must be 'key' or a function of the input returning the group`);

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Why `concurrency` and `rateLimit` of a `@Workflow` are wrong, naming each option: limits are
 * integers ≥ 1, `period` a duration > 0, `by` `'key'` or a function; when both group their runs,
 * they must group them alike (the same `by`).
 */
export function queueControlProblems(concurrency: unknown, rateLimit: unknown): ValidationError[] {
  const out: (ValidationError | undefined)[] = [];
  if (concurrency !== undefined && typeof concurrency !== 'number') {
    if (!isObject(concurrency)) out.push(problem('concurrency', concurrency, 'isConcurrency', 'concurrency must be a number or { limit, by }'));
    else
      out.push(
        ...unknownOptionProblems(concurrency, CONCURRENCY_OPTION_NAMES, 'concurrency.'),
        limitProblem(concurrency.limit, 'concurrency.limit'),
        byProblem(concurrency.by, 'concurrency.by', true),
      );
  } else if (concurrency !== undefined) out.push(limitProblem(concurrency, 'concurrency'));
  if (rateLimit !== undefined) {
    if (!isObject(rateLimit)) out.push(problem('rateLimit', rateLimit, 'isRateLimit', 'rateLimit must be { limit, period, by? }'));
    else {
      const period = tryParseDuration(rateLimit.period);
      out.push(
        ...unknownOptionProblems(rateLimit, RATE_LIMIT_OPTION_NAMES, 'rateLimit.'),
        limitProblem(rateLimit.limit, 'rateLimit.limit'),
        period !== undefined && period > 0
          ? undefined
          : problem('rateLimit.period', rateLimit.period, 'isDuration', 'rateLimit.period must be a duration longer than 0'),
        byProblem(rateLimit.by, 'rateLimit.by', false),
      );
    }
  }
  const concBy = isObject(concurrency) ? concurrency.by : undefined;
  const rateBy = isObject(rateLimit) ? rateLimit.by : undefined;
  if (concBy !== undefined && rateBy !== undefined && concBy !== rateBy) {
    out.push(
      problem(
        'rateLimit.by',
        rateBy,
        'sameGroupBy',
        "concurrency.by and rateLimit.by must be the same (both 'key', or the same function); one of the two may leave its runs ungrouped",
      ),
    );
  }
  return out.filter((p): p is ValidationError => p !== undefined);
}
