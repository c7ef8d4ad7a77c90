import { days, hours, minutes, seconds } from '../../src';
import { toMs, tryParseDuration } from '../../src/domain/duration';

describe('Duration helpers', () => {
  it('seconds, minutes, hours, days return milliseconds', () => {
    expect(seconds(1)).toBe(1_000);
    expect(seconds(30)).toBe(30_000);
    expect(seconds(0.5)).toBe(500);
    expect(minutes(5)).toBe(300_000);
    expect(hours(2)).toBe(7_200_000);
    expect(days(7)).toBe(604_800_000);
    expect(days(0)).toBe(0);
  });
});

// Duration strings are parsed by the options module (internal; the public surface is the option
// validation exercised in test/integration/options.spec.ts).
describe('Duration parsing', () => {
  it.each([
    ['500ms', 500],
    ['30s', 30_000],
    ['5m', 300_000],
    ['2h', 7_200_000],
    ['7d', 604_800_000],
    ['1.5s', 1_500],
    [0, 0],
    [250, 250],
  ])('%p is %p ms', (input, ms) => {
    expect(tryParseDuration(input)).toBe(ms);
    expect(toMs(input as never)).toBe(ms);
  });

  it.each([['abc'], ['5 parsecs'], [''], ['-5s'], [-1], [Number.NaN], [Infinity], [null], [{}], ['10']])('%p is not a duration', (input) => {
    expect(tryParseDuration(input)).toBeUndefined();
    expect(() => toMs(input as never, 'heartbeatInterval')).toThrow(/heartbeatInterval/);
  });
});
