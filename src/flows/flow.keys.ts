import { KeyTakenError, UnknownWorkflowError } from '../errors';
import { decideStart } from '../domain/keys.policy';
import type { WorkflowRegistry } from '../definition/workflow.registry';
import type { ActivityStore } from '../store/activity.store';
import type { Queryable } from '../store/db';
import type { RunsStore } from '../store/runs.store';

/** A flow node that is to hold its key: the run id it gets, its workflow and key. */
export interface KeyedNode {
  id: string;
  workflow: string;
  key: string;
}

/** A key a flow node takes over from a finished holder. */
export interface Handoff {
  node: KeyedNode;
  from: string;
  fromStatus: string;
}

/**
 * Makes the keys of flow nodes free for them, in the caller's transaction, before any node is
 * inserted. Each key is decided as a `start` with `onDuplicate: 'error'` would be (docs/keys.md):
 * no holder, or a finished holder whose key the workflow's `reuse` frees, lets the node take it
 * (the holder gives it up); any other holder refuses the whole flow with `KeyTakenError`. A flow
 * node never answers with another run nor acts on one (no `useExisting`, `cancelExisting`,
 * `runAgain` or `sendEvent`): the flow tracks its own nodes only. Holders are locked in
 * (workflow, key) order, so two flows claiming the same keys cannot deadlock. `decide` only locks,
 * `handOff` writes: a refused flow has written nothing.
 */
export class FlowKeys {
  constructor(
    private readonly registry: WorkflowRegistry,
    private readonly runs: RunsStore,
    private readonly activity: ActivityStore,
  ) {}

  /**
   * Locks the holders of the nodes' keys and decides (`KeyTakenError`; `UnknownWorkflowError`, whose
   * message names `what` needed the definition); returns the hand-offs due.
   */
  async decide(q: Queryable, nodes: KeyedNode[], what: string): Promise<Handoff[]> {
    const sorted = [...nodes].sort((a, b) => (a.workflow === b.workflow ? cmp(a.key, b.key) : cmp(a.workflow, b.workflow)));
    const handoffs: Handoff[] = [];
    for (const node of sorted) {
      const def = this.registry.find(node.workflow);
      if (!def) throw new UnknownWorkflowError(node.workflow, what);
      const holder = await this.runs.lockHolder(q, node.workflow, node.key);
      const decision = decideStart(def.reuse, 'error', holder && { status: holder.status, pickedUp: holder.picked_up });
      if (decision.action !== 'create') throw new KeyTakenError(holder!.id, node.key, node.workflow);
      if (holder) handoffs.push({ node, from: holder.id, fromStatus: holder.status });
    }
    return handoffs;
  }

  /**
   * The holders give their keys up (before the nodes are inserted); each hand-off is recorded in the
   * activity log, and its workflow pushed to `handedOff` (counted by the caller once it committed).
   */
  async handOff(q: Queryable, handoffs: Handoff[], via: 'startFlow' | 'appendFlow' | 'rerunFlow', handedOff: string[]): Promise<void> {
    for (const h of handoffs) {
      handedOff.push(h.node.workflow);
      await this.runs.dropKey(q, h.from);
      await this.activity.record(q, 'key_handed_off', h.node.id, h.node.workflow, h.node.key, { from: h.from, fromStatus: h.fromStatus, via });
    }
  }
}

const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
