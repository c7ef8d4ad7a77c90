import { DurableValidationError } from '../errors';
import { jsonProblem } from '../domain/validation';
import { FINAL } from './waits';

/**
 * Throws when `value`, returned by step `step`, cannot be stored: a `DurableValidationError` that
 * fails the step for good (every attempt would return the same; stored, it would fail the whole write).
 */
export function assertStorableResult(value: unknown, step: string): void {
  const unstorable = jsonProblem(value, 'result');
  if (!unstorable) return;
  const why = Object.values(unstorable.constraints ?? {}).join('; ');
  const message = `step "${step}" returned a value that cannot be stored: ${why} (not retried: every attempt would return the same)`;
  throw Object.assign(new DurableValidationError(message, [unstorable]), { [FINAL]: true });
}
