import type { Execution } from './execution';

/**
 * The runs whose step (or compensation) a node cut short when it fenced itself, with the lease epoch
 * of their claim, until a heartbeat finds them given back: given back as strays, their interrupted
 * attempt counts (see `NodeBeat.cutShort`).
 */
export class CutShortRuns {
  private readonly runs = new Map<string, number>();

  /** The node fenced itself: every execution is lost for `reason`, and those whose step was running are cut short. */
  fence(executions: Iterable<Execution>, reason: Error): void {
    for (const e of executions) {
      if (e.stepping && !e.lost) this.runs.set(e.runId, e.epoch);
      e.lose(reason);
    }
  }

  /** Those not known to be given back yet. */
  list(): { id: string; epoch: number }[] {
    return [...this.runs].map(([id, epoch]) => ({ id, epoch }));
  }

  /** A beat sent `sent` (from {@link list}) and the node still holds `held` of them: the others are given back or gone. */
  settled(sent: { id: string; epoch: number }[], held: string[]): void {
    const still = new Set(held);
    for (const { id, epoch } of sent) if (!still.has(id) && this.runs.get(id) === epoch) this.runs.delete(id);
  }
}
