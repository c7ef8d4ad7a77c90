import { sql } from './db';

export interface WaitOptions {
  /** Deadline in ms (default 10 s). */
  timeout?: number;
  /** Poll interval in ms (default 25 ms). */
  interval?: number;
  /** Describes what was awaited, for the failure message. */
  message?: string;
}

const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Polls `predicate` until it returns a truthy value (which is returned) or the deadline passes
 * (then throws, naming what was awaited and the last value/error seen). Never a fixed sleep.
 */
export async function waitFor<T>(predicate: () => T | Promise<T>, { timeout = 10_000, interval = 25, message }: WaitOptions = {}): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeout;
  let last: unknown;
  let lastError: unknown;
  for (;;) {
    try {
      last = await predicate();
      lastError = undefined;
      if (last) return last as NonNullable<T>;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() >= deadline) {
      const what = message ?? predicate.toString().slice(0, 200);
      const detail = lastError ? `last error: ${lastError instanceof Error ? lastError.stack : String(lastError)}` : `last value: ${safeJson(last)}`;
      throw new Error(`waitFor timed out after ${timeout} ms: ${what}\n${detail}`);
    }
    await pause(interval);
  }
}

/** Retries an assertion block until it stops throwing, or rethrows its last error at the deadline. */
export async function eventually(assertion: () => unknown | Promise<unknown>, opts: WaitOptions = {}): Promise<void> {
  const deadline = Date.now() + (opts.timeout ?? 10_000);
  for (;;) {
    try {
      await assertion();
      return;
    } catch (err) {
      if (Date.now() >= deadline) throw err;
    }
    await pause(opts.interval ?? 25);
  }
}

function safeJson(v: unknown): string {
  try {
    return JSON.stringify(v);
  } catch {
    return String(v);
  }
}

/** A latch a test opens to let steps proceed; steps `await gate.wait()`. */
export class Gate {
  private opened = false;
  private waiters: Array<() => void> = [];
  /** How many callers are currently waiting (or have waited) — to know a step has reached the gate. */
  arrived = 0;

  wait(signal?: AbortSignal): Promise<void> {
    this.arrived++;
    if (this.opened) return Promise.resolve();
    return new Promise<void>((resolve) => {
      this.waiters.push(resolve);
      signal?.addEventListener('abort', () => resolve(), { once: true });
    });
  }

  open(): void {
    this.opened = true;
    const w = this.waiters;
    this.waiters = [];
    w.forEach((fn) => fn());
  }

  get isOpen(): boolean {
    return this.opened;
  }
}

/** Tracks how many sections run at the same time. */
export class ConcurrencyTracker {
  active = 0;
  max = 0;
  total = 0;
  enter(): void {
    this.active++;
    this.total++;
    this.max = Math.max(this.max, this.active);
  }
  exit(): void {
    this.active--;
  }
}

/**
 * Waits until some backend is blocked on a lock while running a statement that contains every one
 * of `fragments` (the moment a race under test is set up). The statement may come from a process
 * that is still starting, so the deadline is long.
 */
export async function waitForLockWait(fragments: string[], message: string): Promise<void> {
  await waitFor(
    async () =>
      (
        await sql(`SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND (SELECT bool_and(strpos(query, f) > 0) FROM unnest($1::text[]) f)`, [
          fragments,
        ])
      ).length > 0,
    { message, timeout: 60_000 },
  );
}
