import type { AbortScope } from './abort.scope';

/**
 * The worker's slots: at most `size` steps (user code) run at once on a node. A step takes a slot
 * before its body runs and gives it back as soon as the body settled, so checkpoints and completions
 * are written without holding one. Runs claimed ahead (and runs between two steps) wait here in
 * arrival order, those between steps first (they are further along).
 */
export class Slots {
  private busy = 0;
  private readonly waiters: Waiter[] = [];
  private readonly continuing: Waiter[] = [];
  /** Set by {@link close}: every wait (current and later) rejects with it. */
  private closedBy?: Error;
  /** When the most recent steps ended (a ring of the last {@link PACE_SAMPLES}), for {@link pace}. */
  private readonly ends: number[] = [];
  private next = 0;

  constructor(readonly size: number) {}

  /** Steps running now. */
  get active(): number {
    return this.busy;
  }

  /** Runs waiting for a slot. */
  get waiting(): number {
    return this.waiters.length + this.continuing.length;
  }

  /**
   * Resolves once a slot is this caller's; `continuing`: a run between two steps (served first).
   * Rejects with the scope's reason when `cancel` aborts first (the waiter leaves the queue).
   */
  acquire(continuing = false, cancel?: AbortScope): Promise<void> {
    if (this.closedBy) return Promise.reject(this.closedBy);
    if (cancel?.reason) return Promise.reject(cancel.reason);
    if (this.busy < this.size && this.waiting === 0) return Promise.resolve(this.take());
    const queue = continuing ? this.continuing : this.waiters;
    return new Promise((resolve, reject) => {
      const onCancel = (reason: Error) => {
        const i = queue.indexOf(waiter);
        if (i >= 0) queue.splice(i, 1);
        reject(reason);
      };
      const waiter: Waiter = {
        resolve: () => {
          cancel?.unlisten(onCancel);
          resolve(this.take());
        },
        reject: (reason) => {
          cancel?.unlisten(onCancel);
          reject(reason);
        },
      };
      cancel?.listen(onCancel);
      queue.push(waiter);
    });
  }

  /** Gives a slot back; the next waiter (if any) takes it. */
  release(): void {
    this.busy--;
    this.record(Date.now());
    const next = this.continuing.shift() ?? this.waiters.shift();
    next?.resolve();
  }

  /** Shutdown: no more slots are given; every wait, current or later, rejects with `reason`. */
  close(reason: Error): void {
    this.closedBy = reason;
    for (const w of [...this.continuing.splice(0), ...this.waiters.splice(0)]) w.reject(reason);
  }

  /**
   * Slots freed per millisecond over the last {@link PACE_WINDOW_MS} (0 before two steps ended): how
   * fast queued runs get a slot here, so that the worker claims ahead only what it will start soon.
   * Steps that hold their slots long bring it down to nothing, and nothing is claimed ahead.
   */
  pace(now = Date.now()): number {
    const n = this.ends.length;
    if (n < 2) return 0;
    const oldest = n < PACE_SAMPLES ? this.ends[0] : this.ends[this.next];
    // every sample recent: the ring spans less than the window, and says the pace itself
    if (now - oldest <= PACE_WINDOW_MS) return n / Math.max(1, now - oldest);
    let recent = 0;
    for (const t of this.ends) if (now - t <= PACE_WINDOW_MS) recent++;
    return recent / PACE_WINDOW_MS;
  }

  private take(): void {
    this.busy++;
  }

  private record(now: number): void {
    if (this.ends.length < PACE_SAMPLES) this.ends.push(now);
    else {
      this.ends[this.next] = now;
      this.next = (this.next + 1) % PACE_SAMPLES;
    }
  }
}

interface Waiter {
  resolve: () => void;
  reject: (reason: Error) => void;
}

/** How many recent step ends {@link Slots.pace} looks at. */
const PACE_SAMPLES = 256;
/** How far back {@link Slots.pace} looks. */
const PACE_WINDOW_MS = 500;
