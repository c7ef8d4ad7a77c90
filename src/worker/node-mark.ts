import type { Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';

/**
 * This process's mark on its node's row (`nodes.process`), and what the marks its beats found tell:
 * whether another live process beats under the same node id (a misconfiguration, logged as an
 * error), and so whether the process may give back runs of its node it does not know (strays).
 */
export class NodeMark {
  /** Drawn at boot: the `process` its beats write. */
  readonly id = randomUUID();
  /** Monotonic times of the first successful beat, of the last one that found another mark, and of the last error logged. */
  private firstOkAt?: number;
  private sharedAt?: number;
  private loggedAt?: number;

  constructor(
    private readonly nodeId: string,
    private readonly nodeTimeoutMs: number,
    private readonly logger: Logger,
  ) {}

  /**
   * Strays may be given back: the process has had its node id to itself for twice `nodeTimeout`
   * since its first beat. A live process of the same id leaves its mark at most about 1.5×
   * `nodeTimeout` apart (it fences itself past three quarters without a beat, and a beat's reply
   * later than that lifts no fence), so a run this one does not know is not such a process's.
   */
  mayGiveBack(now: number): boolean {
    const wait = 2 * this.nodeTimeoutMs;
    return this.firstOkAt !== undefined && now - this.firstOkAt >= wait && !this.sharedWithin(wait, now);
  }

  /** A beat succeeded; `other`: the row it renewed bore another process's mark. */
  beaten(other: boolean, now: number): void {
    // at the first beat that mark is a predecessor's; at a later one, another process beat since
    if (other && this.firstOkAt !== undefined) this.shared(now);
    this.firstOkAt ??= now;
  }

  /** At shutdown the node's row stays: another process beat under the id lately and still needs it. */
  keepRow(now: number): boolean {
    return this.sharedWithin(2 * this.nodeTimeoutMs, now);
  }

  private sharedWithin(ms: number, now: number): boolean {
    return this.sharedAt !== undefined && now - this.sharedAt < ms;
  }

  /** Another live process beats under this node id: logged as an error, again at most once per `nodeTimeout`. */
  private shared(now: number): void {
    this.sharedAt = now;
    if (this.loggedAt !== undefined && now - this.loggedAt < this.nodeTimeoutMs) return;
    this.loggedAt = now;
    this.logger.error(
      `another process is running with nodeId "${this.nodeId}": give each process its own nodeId. ` +
        'Until one of them stops, neither gives back a run it holds without running it (a claim whose reply was lost)',
    );
  }
}
