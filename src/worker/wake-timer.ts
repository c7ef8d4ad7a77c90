import { MAX_TIMER_MS } from '../domain/duration';

/** Most wake-up times kept; later ones are left to polling. */
const MAX_WAKES = 1_000;

/**
 * The worker's wake-ups for runs due later on this node (retry back-offs, sleeps, wait timeouts):
 * one timer for the earliest of at most {@link MAX_WAKES} times, however many runs wait. A wake-up
 * dropped beyond that bound, or later than a timer can wait, is found by the poll (every run is due
 * in the database whatever this keeps).
 */
export class WakeTimer {
  /** Due times, soonest first. */
  private readonly at: number[] = [];
  private timer?: NodeJS.Timeout;
  private timerAt = Infinity;
  private stopped = false;

  constructor(private readonly wake: () => void) {}

  /** Wakes the worker in `delayMs` (a little after, so that the run is due when it claims). */
  after(delayMs: number): void {
    if (this.stopped) return;
    const t = Date.now() + Math.max(0, delayMs) + 5;
    let i = this.at.length;
    while (i > 0 && this.at[i - 1] > t) i--;
    if (i >= MAX_WAKES) return;
    this.at.splice(i, 0, t);
    if (this.at.length > MAX_WAKES) this.at.pop();
    this.arm();
  }

  /** Cancels every wake-up. */
  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.at.length = 0;
  }

  private arm(): void {
    const next = this.at[0];
    if (next === undefined || next >= this.timerAt) return;
    if (this.timer) clearTimeout(this.timer);
    this.timerAt = next;
    this.timer = setTimeout(() => this.fire(), Math.min(MAX_TIMER_MS, Math.max(0, next - Date.now())));
  }

  private fire(): void {
    this.timer = undefined;
    this.timerAt = Infinity;
    const now = Date.now();
    let due = 0;
    while (due < this.at.length && this.at[due] <= now) due++;
    this.at.splice(0, due);
    if (due > 0) this.wake();
    this.arm();
  }
}
