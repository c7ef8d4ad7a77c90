import type { RetryPolicy } from '../options/workflow-options.interface';
import type { ResolvedRetry } from '../definition/workflow-definition';
import { toMs } from './duration';

/** The default retry policy of API.md. */
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
  if (!Number.isInteger(attempts) || attempts < 1) throw new RangeError(`${what}: retry.attempts must be an integer ≥ 1`);
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
