import type { Duration } from '../domain/duration';

/** When a finished run's key may be taken by a new start (spec: "Choosing reuse"). */
export type ReusePolicy = 'afterClose' | 'afterFailure' | 'never';

/** What a start does when the key is taken (spec: "What a Duplicate Returns"). */
export type OnDuplicate = 'useExisting' | 'error' | 'cancelExisting' | 'runAgain' | { sendEvent: string };

/** Retry policy of a step (or, on a workflow, the default of its steps). */
export interface RetryPolicy {
  /** Total attempts, the first included. Default 3. */
  attempts?: number;
  /** Delay growth between attempts. Default `'exponential'`. */
  backoff?: 'exponential' | 'fixed';
  /** Delay before the second attempt. Default `'1s'`. */
  initialDelay?: Duration;
  /** Cap on the delay. Default `'5m'`. */
  maxDelay?: Duration;
}

/** Debounce of keyed starts (spec: "Collapse a Burst"). */
export interface DebounceOptions {
  /** Each keyed start waits this long; a start in that time replaces the input and restarts the wait. */
  period: Duration;
  /** Cap from the first start. */
  timeout?: Duration;
}

interface WorkflowOptionsBase {
  /** Debounce keyed starts. */
  debounce?: DebounceOptions;
  /** The whole run, counted from when it is first due. */
  timeout?: Duration;
  /** Default retry policy of the steps. */
  retry?: RetryPolicy;
}

/**
 * Options of `@Workflow`. `reuse: 'never'` with `onDuplicate: 'runAgain'` does not type-check
 * (and throws when the class is defined if types are bypassed).
 */
export type WorkflowOptions = WorkflowOptionsBase &
  (
    | { reuse?: 'afterClose' | 'afterFailure'; onDuplicate?: OnDuplicate }
    | { reuse: 'never'; onDuplicate?: Exclude<OnDuplicate, 'runAgain'> }
  );

/** Options of `@Step`. */
export interface StepOptions {
  /** Retry policy of this step (overrides the workflow's). */
  retry?: RetryPolicy;
  /** Each attempt of this step; on expiry `ctx.signal` aborts and the attempt fails. */
  timeout?: Duration;
  /** A method of the same class that undoes this step when the run fails for good. */
  compensate?: string;
}
