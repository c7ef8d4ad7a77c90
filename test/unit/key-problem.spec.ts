import { keyProblem } from '../../src/domain/validation';

/** The message of the size rule that keyProblem gives for `key`. */
const sizeMessage = (...args: Parameters<typeof keyProblem>) => keyProblem(...args)?.constraints?.keyBytes;

describe('keyProblem: how a caller gives no key, said after the size rule', () => {
  it("the API's wording by default: use null for no key", () => {
    expect(sizeMessage('')).toBe('key must be 1 to 255 bytes of UTF-8 (got 0); use null for no key');
    expect(sizeMessage('k'.repeat(256), 'nodes[0].key')).toBe('nodes[0].key must be 1 to 255 bytes of UTF-8 (got 256); use null for no key');
  });

  it('a wording of the caller, or none (a command line cannot give null)', () => {
    expect(sizeMessage('', '--key', 'leave --key out for no key')).toBe('--key must be 1 to 255 bytes of UTF-8 (got 0); leave --key out for no key');
    expect(sizeMessage('', '--key', false)).toBe('--key must be 1 to 255 bytes of UTF-8 (got 0)');
  });

  it('a good key, or none, is no problem whatever the wording', () => {
    for (const key of ['k', 'k'.repeat(255), null, undefined]) expect(keyProblem(key, 'key', false)).toBeUndefined();
  });
});
