/**
 * Numbers the claims of this node (claim statements and starts inserting their run claimed here),
 * each stamped on the runs it takes (`claim_seq`), so that a heartbeat can tell a run the node
 * forgot (its claim's reply never arrived) from one whose claim is still on its way: every run
 * stamped below {@link answeredBelow} was claimed by a statement whose answer came back.
 */
export class ClaimSequence {
  /** From the clock: above the numbers an earlier process of the same node id used (see {@link numberAbove}). */
  private last = Date.now() * 1000;
  private readonly out = new Set<number>();
  /** The number of this process's first claim, once it began. */
  private first?: number;

  /** A number for a claim about to be sent, out until {@link end}. */
  begin(): number {
    this.last += 1;
    this.first ??= this.last;
    this.out.add(this.last);
    return this.last;
  }

  /** The claim numbered `seq` is answered and what it took is launched (or it failed). */
  end(seq: number): void {
    this.out.delete(seq);
  }

  /**
   * Every claim numbered below this one has ended: the lowest still out, else the next (a claim
   * that begins later gets a number from here up, so its runs are never taken for forgotten ones).
   */
  answeredBelow(): number {
    let low = this.last + 1;
    for (const seq of this.out) if (seq < low) low = seq;
    return low;
  }

  /**
   * The number of this process's first claim (the next one while none began): a run of the node
   * stamped below it was claimed by an earlier process of the same node id.
   */
  firstClaim(): number {
    return this.first ?? this.last + 1;
  }

  /**
   * Numbers the next claims above `seq`, the highest the database holds for this node's runs: runs
   * an earlier process of the same node id stamped after a clock step backwards become answered.
   */
  numberAbove(seq: number): void {
    if (seq > this.last) this.last = seq;
  }
}
