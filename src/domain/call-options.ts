import { assertValid, optionsProblems, storableTextProblem } from './validation';

/**
 * The options of call `what` (`known`: their names): `{}` when undefined or null (no options);
 * a `DurableValidationError` when they are anything but a plain object — a key, a flag or a
 * duration passed where the options go would otherwise be ignored — or name an unknown option.
 */
export function callOptions<T extends object>(what: string, options: T | null | undefined, known: readonly string[]): T {
  assertValid(what, optionsProblems(options, 'options', known));
  return options ?? ({} as T);
}

/**
 * Whether `name` cannot be the name of a stored row (absent, or not a text Postgres can store: see
 * `storableTextProblem`): a lookup by it finds nothing without asking.
 */
export function unstorableName(name: unknown): boolean {
  return name === undefined || name === null || storableTextProblem(name, 'name') !== undefined;
}
