import { toMs, type Duration } from './duration';
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
}

/** The option names of a {@link RetryPolicy}. */
export const RETRY_OPTION_NAMES = optionNames<RetryPolicy>({ attempts: true, backoff: true, initialDelay: true, maxDelay: true });

/** A retry policy with every default applied, in milliseconds. */
export interface ResolvedRetry {
  attempts: number;
  backoff: 'exponential' | 'fixed';
  initialDelayMs: number;
  maxDelayMs: number;
}

/** The default retry policy (docs/workflows.md#retries). */
export const DEFAULT_RETRY: ResolvedRetry = {
  attempts: 3,
  backoff: 'exponential',
  initialDelayMs: 1_000,
  maxDelayMs: 300_000,
};

/** Layers a step's policy over its workflow's over the default. */
export function resolveRetry(what: string, ...policies: (RetryPolicy | undefined)[]): ResolvedRetry {
  const merged = Object.assign({}, ...policies.filter(Boolean)) as RetryPolicy;
  const attempts = merged.attempts ?? DEFAULT_RETRY.attempts;
  if (!Number.isInteger(attempts) || attempts < 1) {
    assertValid(what, [problem('retry.attempts', attempts, 'isInt', 'retry.attempts must be an integer ≥ 1')]);
  }
  return {
    attempts,
    backoff: merged.backoff ?? DEFAULT_RETRY.backoff,
    initialDelayMs: merged.initialDelay === undefined ? DEFAULT_RETRY.initialDelayMs : toMs(merged.initialDelay, `${what}: retry.initialDelay`),
    maxDelayMs: merged.maxDelay === undefined ? DEFAULT_RETRY.maxDelayMs : toMs(merged.maxDelay, `${what}: retry.maxDelay`),
  };
}

/** Delay before attempt `attempt + 1`, after attempt `attempt` (1-based) failed. */
export function backoffDelay(policy: ResolvedRetry, attempt: number): number {
  const factor = policy.backoff === 'fixed' ? 1 : 2 ** (attempt - 1);
  return Math.min(policy.maxDelayMs, policy.initialDelayMs * factor);
}
