import { ClaimSequence } from '../../src/worker/claim-sequence';

describe('ClaimSequence', () => {
  it('numbers claims upwards from the clock, and above the highest number the database holds for the node once told', () => {
    const before = Date.now() * 1000;
    const claims = new ClaimSequence();
    const a = claims.begin();
    const b = claims.begin();
    expect(a).toBeGreaterThan(before);
    expect(b).toBe(a + 1);
    claims.end(a);
    claims.end(b);
    // an earlier process of the node id, after the clock stepped back, stamped higher numbers
    claims.numberAbove(b + 1000);
    expect(claims.answeredBelow()).toBe(b + 1001);
    expect(claims.begin()).toBe(b + 1001);
    // a lower number changes nothing
    claims.numberAbove(a);
    expect(claims.begin()).toBe(b + 1002);
  });

  it("knows its process's first claim: the next number until one begins, then that claim's, whatever is numbered after", () => {
    const claims = new ClaimSequence();
    claims.numberAbove(Date.now() * 1000 + 500);
    const next = claims.firstClaim();
    const a = claims.begin();
    expect(a).toBe(next);
    claims.end(a);
    claims.numberAbove(a + 1000);
    claims.begin();
    expect(claims.firstClaim()).toBe(a);
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
    // none out: every claim so far; one that begins later is numbered from here up
    expect(claims.answeredBelow()).toBe(c + 1);
    expect(claims.begin()).toBe(c + 1);
  });
});
