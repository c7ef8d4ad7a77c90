/**
 * Coalesces the workers' wake-up notifications of autocommit starts. Postgres serialises the
 * commits of transactions that NOTIFY, so a NOTIFY in every start stops concurrent starts from
 * scaling. At most one notification goes out per window: the first start of a window notifies in
 * its own statement (no added pickup latency); starts inside the window skip it, and once one of
 * them has committed a single notification follows at the window's end — so a worker never misses
 * a committed run for longer than the window, and a stream of starts costs one NOTIFY per window.
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
    if (this.trailing || now - this.lastAt < this.windowMs) return false;
    this.lastAt = now;
    return true;
  }

  /** Called once a start that did not notify has committed: one notification follows by the window's end. */
  committedWithout(): void {
    if (this.trailing) return;
    this.trailing = true;
    const timer = setTimeout(
      () => {
        this.trailing = false;
        this.lastAt = Date.now();
        this.send().catch(() => undefined); // a lost wake-up is covered by polling
      },
      Math.max(0, this.lastAt + this.windowMs - Date.now()),
    );
    timer.unref();
  }
}
