import { monotonicMs } from '../domain/monotonic-clock';

/**
 * The claim loop's signs of life, read by the health indicator: when the loop last ticked, and
 * when the claim statement out now was sent. A claim that never comes back stalls the loop though
 * the poll timer still ticks, so while one is out the loop is as alive as that claim is recent.
 * Times are on {@link monotonicMs}: a wall clock set forward does not make the loop look silent.
 */
export class LoopPulse {
  private tickedAt = -Infinity;
  private claimSentAt?: number;

  /** The loop ticked (a claim pass was asked for). */
  tick(): void {
    this.tickedAt = monotonicMs();
  }

  /** A claim statement was sent. */
  claimSent(): void {
    this.claimSentAt = monotonicMs();
  }

  /** The claim statement out came back (or failed). */
  claimBack(): void {
    this.claimSentAt = undefined;
  }

  /** When the loop last showed it was alive, on {@link monotonicMs} (`-Infinity`: never): when the claim out now was sent, else its last tick. */
  get aliveAt(): number {
    return this.claimSentAt ?? this.tickedAt;
  }

  /** True while a claim statement is out. */
  get claimOut(): boolean {
    return this.claimSentAt !== undefined;
  }
}
