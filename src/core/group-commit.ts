/**
 * Group commit across callers: items queue while `maxInFlight` statements are out, and the next
 * statement takes every queued item (up to `maxBatch`). An item arriving at an idle queue goes out
 * at once, so one caller waits for one round trip and many callers share them. `write` settles
 * its items itself (each item carries its caller's callbacks) and must not reject.
 */
export class GroupCommit<T> {
  private queue: T[] = [];
  private inFlight = 0;
  private idle: (() => void)[] = [];
  /** Callers waiting for room in a full queue. */
  private full: (() => void)[] = [];

  constructor(
    private readonly write: (batch: T[]) => Promise<void>,
    private readonly maxBatch: number,
    private readonly maxInFlight: number,
    /** Most items queued; a caller pushing into a full queue waits for room (back-pressure). */
    private readonly maxQueued = Infinity,
  ) {}

  /** Queues an item (once there is room); it goes out in the next statement. */
  async push(item: T): Promise<void> {
    while (this.queue.length >= this.maxQueued) await new Promise<void>((resolve) => this.full.push(resolve));
    this.queue.push(item);
    this.pump();
  }

  /** Resolves once nothing is queued or in flight, or after `withinMs`; true when idle. */
  async whenIdle(withinMs = Infinity): Promise<boolean> {
    if (this.isIdle()) return true;
    let timer: NodeJS.Timeout | undefined;
    let onIdle!: () => void;
    const idle = new Promise<void>((resolve) => this.idle.push((onIdle = resolve)));
    const late = new Promise<void>((resolve) => {
      if (withinMs !== Infinity) timer = setTimeout(resolve, withinMs);
    });
    await Promise.race([idle, late]);
    if (timer) clearTimeout(timer);
    this.idle = this.idle.filter((f) => f !== onIdle);
    return this.isIdle();
  }

  /** Removes and returns the items not yet sent. */
  takeQueued(): T[] {
    return this.queue.splice(0);
  }

  /** Nothing queued or in flight: an item pushed now would go out alone at once. */
  isIdle(): boolean {
    return this.queue.length === 0 && this.inFlight === 0;
  }

  private pump(): void {
    while (this.inFlight < this.maxInFlight && this.queue.length > 0) {
      const batch = this.queue.splice(0, this.maxBatch);
      for (const wake of this.full.splice(0, batch.length)) wake();
      this.inFlight++;
      void this.write(batch).finally(() => {
        this.inFlight--;
        this.pump();
        if (this.isIdle()) this.idle.splice(0).forEach((f) => f());
      });
    }
  }
}
