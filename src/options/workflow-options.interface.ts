import type { Duration } from '../domain/duration';
import type { OnDuplicate } from '../domain/keys.policy';
import type { RetryPolicy } from '../domain/retry.policy';
import type { ConcurrencyOption, RateLimitOption } from './queue-controls';

/** Debounce of keyed starts (spec: "Collapse a Burst"). */
export interface DebounceOptions {
  /** Each keyed start waits this long; a start in that time replaces the input and restarts the wait. */
  period: Duration;
  /** Cap from the first start. */
  timeout?: Duration;
  /**
   * The input the run keeps when a start lands in its window: `'last'` (default) the newer one,
   * `'first'` the one it has, or a function of both, called under the run's row lock (so each
   * start's input is folded in exactly once, whatever the concurrency); its result must be JSON.
   */
  merge?: DebounceMerge;
}

/** How a debounced run's input and a newer start's input become one (see {@link DebounceOptions.merge}). */
export type DebounceMerge = 'last' | 'first' | ((held: never, incoming: never) => unknown);

interface WorkflowOptionsBase {
  /** Debounce keyed starts. */
  debounce?: DebounceOptions;
  /** The whole run, counted from when it is first due. */
  timeout?: Duration;
  /** Default retry policy of the steps. */
  retry?: RetryPolicy;
  /** Among due runs, higher priority is claimed first (an integer, default 0); `start(…, { priority })` overrides it. */
  priority?: number;
  /** At most this many runs `running` at once across all nodes, or `{ limit, by }` per group (by key, or a function of the input). */
  concurrency?: ConcurrencyOption;
  /** At most `limit` runs begin in any window of `period` across all nodes (or per group with `by`). */
  rateLimit?: RateLimitOption;
}

/**
 * Options of `@Workflow`. `reuse: 'never'` with `onDuplicate: 'runAgain'` does not type-check
 * (and throws when the class is defined if types are bypassed).
 */
export type WorkflowOptions = WorkflowOptionsBase &
  ({ reuse?: 'afterClose' | 'afterFailure'; onDuplicate?: OnDuplicate } | { reuse: 'never'; onDuplicate?: Exclude<OnDuplicate, 'runAgain'> });

/** Options of `@Step`. */
export interface StepOptions {
  /** Retry policy of this step (overrides the workflow's). */
  retry?: RetryPolicy;
  /** Each attempt of this step; on expiry `ctx.signal` aborts and the attempt fails. */
  timeout?: Duration;
  /** A method of the same class that undoes this step when the run fails for good. */
  compensate?: string;
}
