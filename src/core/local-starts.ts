import { Injectable } from '@nestjs/common';
import type { ClaimedRow } from '../store/runs.types';

/**
 * A free slot of this node's worker, held for one start that may insert its run already claimed by
 * this node. Exactly one of {@link launch} and {@link release} is called, once.
 */
export interface LocalSlot {
  /** The number of the claim the insert is (stamped on the run when it is inserted claimed). */
  readonly seq: number;
  /** The run was inserted claimed by this node: it executes here at once. */
  launch(row: ClaimedRow): void;
  /** It was not (it went to the queue, or the insert failed): the slot is free again. */
  release(): void;
}

/** What the worker offers a start: a held slot when the workflow can begin on this node now. */
export interface LocalRunner {
  hold(workflow: string, runId: string): LocalSlot | undefined;
}

/**
 * The seam between starting and executing on one node: a worker running here offers its free
 * slots, and a start due now takes one to execute its run here without waiting for a claim. A node
 * without a worker offers none.
 */
@Injectable()
export class LocalStarts {
  private runner?: LocalRunner;

  /** Called by the node's worker once it claims (and with undefined when it stops). */
  serve(runner: LocalRunner | undefined): void {
    this.runner = runner;
  }

  /** A held slot for run `runId` of `workflow`, if this node's worker can begin one now. */
  hold(workflow: string, runId: string): LocalSlot | undefined {
    return this.runner?.hold(workflow, runId);
  }
}
