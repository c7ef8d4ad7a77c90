import { DurableValidationError } from '../../src';
import { backoffDelay, resolveRetry } from '../../src/domain/retry.policy';

describe('retry back-off', () => {
  it('without jitter: the exact delay, doubling per attempt (exponential) up to maxDelay, or fixed', () => {
    const exp = resolveRetry('w', { initialDelay: '1s', maxDelay: '5s', jitter: false });
    expect([1, 2, 3, 4, 5].map((a) => backoffDelay(exp, a))).toEqual([1_000, 2_000, 4_000, 5_000, 5_000]);
    const fixed = resolveRetry('w', { initialDelay: 300, backoff: 'fixed', jitter: false });
    expect([1, 2, 3].map((a) => backoffDelay(fixed, a))).toEqual([300, 300, 300]);
  });

  it('jitter is on by default: delays lie between half the delay and the delay, whole milliseconds, both ends reachable', () => {
    const policy = resolveRetry('w', { initialDelay: '1s', maxDelay: '5m' });
    expect(policy.jitter).toBe(true);
    expect(backoffDelay(policy, 3, () => 0)).toBe(2_000);
    expect(backoffDelay(policy, 3, () => 0.999_999_999)).toBe(4_000);
    for (const attempt of [1, 2, 3, 9, 12]) {
      const full = Math.min(300_000, 1_000 * 2 ** (attempt - 1));
      for (let i = 0; i < 200; i++) {
        const d = backoffDelay(policy, attempt);
        expect(Number.isInteger(d)).toBe(true);
        expect(d).toBeGreaterThanOrEqual(full / 2);
        expect(d).toBeLessThanOrEqual(full);
      }
    }
  });

  it('jittered delays of runs that failed together are spread over the window, not bunched', () => {
    const policy = resolveRetry('w', { initialDelay: '10s', backoff: 'fixed' });
    const delays = Array.from({ length: 2_000 }, () => backoffDelay(policy, 1));
    // ten buckets of 500 ms over [5 s, 10 s]: each holds some of them (uniform: ~200 each)
    const buckets = Array.from({ length: 10 }, () => 0);
    for (const d of delays) buckets[Math.min(9, Math.floor((d - 5_000) / 500))]++;
    for (const n of buckets) expect(n).toBeGreaterThan(100);
    expect(new Set(delays).size).toBeGreaterThan(1_000);
  });

  it('retry.jitter must be a boolean; a step may turn off what its workflow turned on', () => {
    expect(() => resolveRetry('workflow "w" step "s"', { jitter: 'yes' as never })).toThrow(DurableValidationError);
    expect(() => resolveRetry('workflow "w" step "s"', { jitter: 'yes' as never })).toThrow(/retry\.jitter must be a boolean/);
    expect(resolveRetry('w', { jitter: true }, { jitter: false }).jitter).toBe(false);
  });
});
