import { MAX_SPAN_MS, toMs, type Duration } from './duration';
import { assertValid, optionNames, problem } from './validation';

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
  /**
   * Default true: each delay is drawn at random between half of it and all of it, so runs that
   * failed together (an outage) do not retry together. `false`: the exact delay.
   */
  jitter?: boolean;
}

/** The option names of a {@link RetryPolicy}. */
export const RETRY_OPTION_NAMES = optionNames<RetryPolicy>({ attempts: true, backoff: true, initialDelay: true, maxDelay: true, jitter: true });

/** A retry policy with every default applied, in milliseconds. */
export interface ResolvedRetry {
  attempts: number;
  backoff: 'exponential' | 'fixed';
  initialDelayMs: number;
  maxDelayMs: number;
  jitter: boolean;
}

/** The default retry policy (docs/workflows.md#retries). */
export const DEFAULT_RETRY: ResolvedRetry = {
  attempts: 3,
  backoff: 'exponential',
  initialDelayMs: 1_000,
  maxDelayMs: 300_000,
  jitter: true,
};

/** Layers a step's policy over its workflow's over the default. */
export function resolveRetry(what: string, ...policies: (RetryPolicy | undefined)[]): ResolvedRetry {
  const merged = Object.assign({}, ...policies.filter(Boolean)) as RetryPolicy;
  const attempts = merged.attempts ?? DEFAULT_RETRY.attempts;
  const jitter = merged.jitter ?? DEFAULT_RETRY.jitter;
  assertValid(what, [
    Number.isInteger(attempts) && attempts >= 1 ? undefined : problem('retry.attempts', attempts, 'isInt', 'retry.attempts must be an integer ≥ 1'),
    typeof jitter === 'boolean' ? undefined : problem('retry.jitter', jitter, 'isBoolean', 'retry.jitter must be a boolean'),
  ]);
  return {
    attempts,
    backoff: merged.backoff ?? DEFAULT_RETRY.backoff,
    initialDelayMs: merged.initialDelay === undefined ? DEFAULT_RETRY.initialDelayMs : toMs(merged.initialDelay, `${what}: retry.initialDelay`, MAX_SPAN_MS),
    maxDelayMs: merged.maxDelay === undefined ? DEFAULT_RETRY.maxDelayMs : toMs(merged.maxDelay, `${what}: retry.maxDelay`, MAX_SPAN_MS),
    jitter,
  };
}

/**
 * Delay before attempt `attempt + 1`, after attempt `attempt` (1-based) failed: the back-off's
 * delay (capped by `maxDelay`), with jitter a whole number of ms drawn uniformly between half of it
 * and all of it. `random` returns a number in [0, 1).
 */
export function backoffDelay(policy: ResolvedRetry, attempt: number, random: () => number = Math.random): number {
  const factor = policy.backoff === 'fixed' ? 1 : 2 ** (attempt - 1);
  const delay = Math.min(policy.maxDelayMs, policy.initialDelayMs * factor);
  if (!policy.jitter) return delay;
  const half = Math.ceil(delay / 2);
  return half + Math.floor(random() * (delay - half + 1));
}
