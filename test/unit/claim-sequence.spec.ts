import { ClaimSequence } from '../../src/worker/claim-sequence';

describe('ClaimSequence', () => {
  it('numbers claims upwards from the clock (above what an earlier process of the node used, unless the clock stepped back)', () => {
    const before = Date.now() * 1000;
    const claims = new ClaimSequence();
    const a = claims.begin();
    const b = claims.begin();
    expect(a).toBeGreaterThan(before);
    expect(b).toBe(a + 1);
  });

  it('counts as answered only the claims below the lowest one still out, whatever order they end in', () => {
    const claims = new ClaimSequence();
    const a = claims.begin();
    const b = claims.begin();
    const c = claims.begin();
    expect(claims.answeredBelow()).toBe(a);
    claims.end(b);
    expect(claims.answeredBelow()).toBe(a);
    claims.end(a);
    expect(claims.answeredBelow()).toBe(c);
    claims.end(c);
    // none out: every run the node holds was claimed by an answered claim, whatever its number
    expect(claims.answeredBelow()).toBe(Number.MAX_SAFE_INTEGER);
    expect(claims.begin()).toBe(c + 1);
    expect(claims.answeredBelow()).toBe(c + 1);
  });
});
