import type { ValidationError } from 'class-validator';
import { RUN_STATUSES } from './run-info';
import { EARLIEST_TIMESTAMPTZ_MS } from './time-bounds';
import { nameProblem, problem, storableTextProblem } from './validation';

/**
 * Checks of the filters of the reads (`listRuns`, `countRuns`, `listKeys`, `listActivity`,
 * `keyStats`): each answers why a value cannot filter, or undefined when it can (or is absent:
 * undefined or null, which does not filter). A value that passes is safe to send to Postgres.
 */

const absent = (value: unknown): value is undefined | null => value === undefined || value === null;

/** What `waitingFor` accepts. */
const WAIT_FILTERS = ['sleep', 'event', 'input', 'children', 'deps'] as const;

const quoted = (values: readonly string[]): string => values.map((v) => `'${v}'`).join(', ');

/** Why `value` is not a `limit` (or `cap`): a number (it is then rounded down and clamped), or undefined. */
export function limitProblem(value: unknown, property = 'limit'): ValidationError | undefined {
  if (absent(value) || (typeof value === 'number' && !Number.isNaN(value))) return undefined;
  return problem(property, value, 'isNumber', `${property} must be a number`);
}

/** A checked `limit` rounded down into 1…`max`, `def` when absent. */
export function clampLimit(value: number | null | undefined, def: number, max = 1000): number {
  return Math.min(Math.max(1, Math.floor(value ?? def)), max);
}

/** Why `value` is not a workflow (a workflow class or a name), or undefined; absent is a problem only when `required`. */
export function workflowRefProblem(value: unknown, required = false, property = 'workflow'): ValidationError | undefined {
  if (absent(value)) return required ? problem(property, value, 'isDefined', `${property} is required (a workflow class or name)`) : undefined;
  if (typeof value === 'function') return undefined;
  if (typeof value === 'string' && value !== '') return storableTextProblem(value, property);
  return problem(property, value, 'isWorkflow', `${property} must be a workflow class or name (a non-empty string)`);
}

/** Why `value` is not a status filter (a run status or an array of them), or undefined. */
export function statusFilterProblem(value: unknown, property = 'status'): ValidationError | undefined {
  if (absent(value)) return undefined;
  const all = Array.isArray(value) ? (value as unknown[]) : [value];
  if (all.every((s) => typeof s === 'string' && (RUN_STATUSES as readonly string[]).includes(s))) return undefined;
  return problem(property, value, 'isStatus', `${property} must be a run status or an array of them (${quoted(RUN_STATUSES)})`);
}

/** Why `value` is not a `waitingFor` filter, or undefined. */
export function waitingForProblem(value: unknown, property = 'waitingFor'): ValidationError | undefined {
  if (absent(value) || (typeof value === 'string' && (WAIT_FILTERS as readonly string[]).includes(value))) return undefined;
  return problem(property, value, 'isWait', `${property} must be one of ${quoted(WAIT_FILTERS)}`);
}

/** Why `value` is not a list of activity kinds (an array of names), or undefined. */
export function kindsProblem(value: unknown, property = 'kinds'): ValidationError | undefined {
  if (absent(value)) return undefined;
  if (!Array.isArray(value)) return problem(property, value, 'isArray', `${property} must be an array of activity kinds`);
  for (const [i, kind] of (value as unknown[]).entries()) {
    const p = nameProblem(kind, `${property}[${i}]`);
    if (p) return p;
  }
  return undefined;
}

/** Why `value` is not a valid `Date` Postgres can hold, or undefined. */
export function dateProblem(value: unknown, property: string): ValidationError | undefined {
  if (absent(value) || (value instanceof Date && value.getTime() >= EARLIEST_TIMESTAMPTZ_MS)) return undefined;
  return problem(property, value, 'isDate', `${property} must be a valid Date (from 4713 BC on)`);
}
