import type { OnDuplicate, ReusePolicy } from '../domain/keys.policy';
import type { ResolvedRetry } from '../domain/retry.policy';
import type { DebounceMerge } from '../options/workflow-options.interface';
import { assertValid, nameProblem } from '../domain/validation';
import { DurableValidationError } from '../errors';
import type { GroupBy } from '../options/queue-controls';

/** One step of a registered workflow. */
export interface StepDefinition {
  name: string;
  index: number;
  retry: ResolvedRetry;
  timeoutMs?: number;
  compensate?: string;
  /** The bound method. */
  run: (ctx: unknown) => unknown;
}

/** A registered workflow: its policy, its steps in order and the provider instance. */
export interface WorkflowDefinition {
  name: string;
  /** The decorated class. */
  type: Function;
  instance: object;
  reuse: ReusePolicy;
  onDuplicate: OnDuplicate;
  debounce?: { periodMs: number; timeoutMs?: number; merge: DebounceMerge };
  timeoutMs?: number;
  /** Priority of its runs among due runs (higher first; a start may override it). */
  priority: number;
  /** Its own retry policy, defaults applied (each step's `retry` layers its own over it). */
  retry: ResolvedRetry;
  /** Its concurrency and rate limits (queue controls), when it has any. */
  controls?: WorkflowControls;
  steps: StepDefinition[];
}

/**
 * A workflow's limits, resolved. `by` groups its runs (both limits group alike); a limit with
 * `grouped: false` counts the whole workflow.
 */
export interface WorkflowControls {
  by?: GroupBy;
  concurrency?: { limit: number; grouped: boolean };
  rateLimit?: { limit: number; periodMs: number; grouped: boolean };
}

/**
 * The group of a new run of `def` (its key, or `by(input)`), '' when its limits count the whole
 * workflow (or for a run without a key grouped by key), null without limits. A `by` function that
 * throws or returns no name (a string of 1 to 255 bytes) is a `DurableValidationError`.
 */
export function groupOf(def: WorkflowDefinition, key: string | null, input: unknown): string | null {
  const c = def.controls;
  if (!c) return null;
  if (c.by === undefined) return '';
  if (c.by === 'key') return key ?? '';
  let group: unknown;
  try {
    group = c.by(input as never);
  } catch (err) {
    throw new DurableValidationError(`workflow "${def.name}": its limits' by(input) threw: ${(err as Error)?.message ?? String(err)}`);
  }
  assertValid(`workflow "${def.name}"`, [nameProblem(group, 'by(input)')]);
  return group as string;
}

/**
 * Index of the last step of `def` at or before `from` that has a `compensate`, or -1: where the
 * compensations of a run that failed after step `from` begin.
 */
export function lastCompensable(def: WorkflowDefinition, from: number): number {
  for (let j = Math.min(from, def.steps.length - 1); j >= 0; j--) if (def.steps[j].compensate) return j;
  return -1;
}
