import type { EntityManager } from 'typeorm';
import type { KeyContendedError, KeyTakenError } from '../errors';
import type { Duration } from '../domain/duration';
import type { OnDuplicate } from '../domain/keys.policy';
import type { StartResult } from '../domain/run-info';
import type { TypedWorkflowClass } from '../definition/durable-workflow';

/** Options of `DurableService.start`. */
export interface StartOptions {
  /** At most one going run per (workflow, key); null or absent = no key. */
  key?: string | null;
  /** Overrides the workflow's `onDuplicate` for this call. */
  onDuplicate?: OnDuplicate;
  /** Join the caller's open transaction. */
  manager?: EntityManager;
  /** Due at this time (default now). */
  runAt?: Date;
  /** Due after this long. */
  delay?: Duration;
  /** Overrides the workflow's priority for this run (higher is claimed first among due runs). */
  priority?: number;
}

/** One item of `startMany`. */
export interface StartManyItem {
  input?: unknown;
  key?: string | null;
  runAt?: Date;
  /** Overrides the workflow's priority for this run. */
  priority?: number;
}

/** An item's result, or why it was refused: its key could not be had, or the workflow's `debounce.merge` threw for it. */
export type StartManyResult = StartResult | { error: KeyTakenError | KeyContendedError | Error };

/** The options of `start` for a workflow whose key is never freed (`reuse: 'never'`): any but `onDuplicate: 'runAgain'`. */
export type NeverFreedStartOptions = Omit<StartOptions, 'onDuplicate'> & { onDuplicate?: Exclude<OnDuplicate, 'runAgain'> };

/**
 * A workflow `start` takes with any {@link StartOptions}: by name, as a class decorated with
 * `@Workflow` (its options are not in its type), or as a class extending `DurableWorkflow(…)` whose
 * type says its keys are freed. A class whose type says `reuse: 'never'` takes {@link NeverFreedStartOptions}.
 */
export type FreedKeyWorkflowRef = string | (Function & TypedWorkflowClass<{ reuse?: 'afterClose' | 'afterFailure' }>);
