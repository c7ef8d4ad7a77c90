/**
 * The database's clock as this node reads it, from the time a claim returned: a run's times (its
 * deadline, the ends of its waits) are on the database's clock, however far the node's is off it.
 */
export class DbClock {
  /** The database's clock less this node's (ms), as of the claim. */
  private readonly offset: number;

  /** `dbNowMs`: the database's time (epoch ms) the claim returned; `localNowMs`: this node's when it came back. */
  constructor(dbNowMs: number, localNowMs = Date.now()) {
    this.offset = dbNowMs - localNowMs;
  }

  /** Now on the database's clock (epoch ms). */
  now(): number {
    return Date.now() + this.offset;
  }
}
