import { WakeCoalescer } from '../../src/runs/wake.coalescer';

describe('WakeCoalescer', () => {
  const WINDOW = 2;
  let sent: number;
  let wake: WakeCoalescer;

  beforeEach(() => {
    jest.useFakeTimers({ now: 1_000_000 });
    sent = 0;
    wake = new WakeCoalescer(WINDOW, async () => {
      sent++;
    });
  });

  afterEach(() => jest.useRealTimers());

  it('the first start of a window notifies in its statement; the others of the window do not', () => {
    expect(wake.lead()).toBe(true);
    expect(wake.lead()).toBe(false);
    jest.advanceTimersByTime(WINDOW - 1);
    expect(wake.lead()).toBe(false);
    jest.advanceTimersByTime(1);
    expect(wake.lead()).toBe(true);
  });

  it('any number of starts committed without a notification get one, at the end of the window', () => {
    expect(wake.lead()).toBe(true);
    for (let i = 0; i < 100; i++) {
      expect(wake.lead()).toBe(false);
      wake.committedWithout();
    }
    jest.advanceTimersByTime(WINDOW - 1);
    expect(sent).toBe(0);
    jest.advanceTimersByTime(1);
    expect(sent).toBe(1);
    jest.advanceTimersByTime(10 * WINDOW);
    expect(sent).toBe(1);
  });

  it('while that notification is pending no start leads; after it, the next window starts', () => {
    wake.lead();
    wake.committedWithout();
    jest.advanceTimersByTime(WINDOW - 1);
    expect(wake.lead()).toBe(false); // the pending notification covers it
    wake.committedWithout();
    jest.advanceTimersByTime(1);
    expect(sent).toBe(1);
    expect(wake.lead()).toBe(false); // the notification just sent opened a window
    jest.advanceTimersByTime(WINDOW);
    expect(wake.lead()).toBe(true);
  });

  it('a stream of starts costs one notification per window', () => {
    let led = 0;
    // 1,000 starts over 100 ms, each its own statement, committed at once
    for (let i = 0; i < 1_000; i++) {
      if (wake.lead()) led++;
      else wake.committedWithout();
      jest.advanceTimersByTime(0.1);
    }
    jest.advanceTimersByTime(WINDOW);
    expect(led + sent).toBeLessThanOrEqual(100 / WINDOW + 2);
    expect(led + sent).toBeGreaterThanOrEqual(100 / WINDOW - 2);
  });
});
