import { days, hours, minutes, seconds } from '../../src';

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
