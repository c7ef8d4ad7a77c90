/**
 * Coalesces the workers' wake-up notifications of autocommit starts. Postgres serialises the
 * commits of transactions that NOTIFY, so a NOTIFY in every start stops concurrent starts from
 * scaling. The first start in a window notifies in its own statement (no added pickup latency);
 * starts inside the window skip it, and one notification is sent for all of them right after the
 * first skipped one committed — so a worker never misses a committed run for longer than the window.
 */
export class WakeCoalescer {
  private lastAt = -Infinity;
  private trailing = false;

  constructor(
    private readonly windowMs: number,
    /** Sends one notification outside any start's transaction. */
    private readonly send: () => Promise<void>,
  ) {}

  /** True when this start's statement should notify itself. */
  lead(): boolean {
    const now = Date.now();
    if (now - this.lastAt < this.windowMs) return false;
    this.lastAt = now;
    return true;
  }

  /** Called once a start that did not notify has committed: one trailing notification follows. */
  committedWithout(): void {
    if (this.trailing) return;
    this.trailing = true;
    setImmediate(() => {
      this.trailing = false;
      this.lastAt = Date.now();
      this.send().catch(() => undefined); // a lost wake-up is covered by polling
    });
  }
}
