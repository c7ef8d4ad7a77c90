import { assertValid, optionsObjectProblem, unknownOptionProblems, UNSTORABLE_RE } from './validation';

/**
 * Longest span of time a call may look back over or move times by (100 years of 365 days):
 * `prune`'s `olderThan` and the testing kit's `skipTime`. Far inside what PostgreSQL intervals and
 * timestamps can hold (the year 4713 BC), so a longer one is refused instead of failing in the database.
 */
export const MAX_SPAN_MS = 36_500 * 86_400_000;

/**
 * The options of call `what` (`known`: their names): `{}` when undefined or null (no options);
 * a `DurableValidationError` when they are anything but a plain object — a key, a flag or a
 * duration passed where the options go would otherwise be ignored — or name an unknown option.
 */
export function callOptions<T extends object>(what: string, options: T | null | undefined, known: readonly string[]): T {
  assertValid(what, [optionsObjectProblem(options, 'options', known), ...unknownOptionProblems(options, known)]);
  return options ?? ({} as T);
}

/**
 * Whether `name` cannot be the name of a stored row (not a string, or holding a NUL or a lone
 * surrogate, which Postgres cannot store): a lookup by it finds nothing without asking.
 */
export function unstorableName(name: unknown): boolean {
  return typeof name !== 'string' || UNSTORABLE_RE.test(name);
}
