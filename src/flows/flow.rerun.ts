import { NotFinishedError, RunNotFoundError } from '../errors';
import { isFinished } from '../domain/run-info';
import { uuidv7 } from '../domain/uuid';
import { assertValid, optionNames, problem } from '../domain/validation';
import type { Queryable } from '../store/db';
import type { FlowsStore } from '../store/flows.store';
import { depOutcome, type DepOutcome } from '../store/flows.types';
import { traceCarrier } from '../observe/telemetry';
import type { FlowKeys } from './flow.keys';
import { reachable } from './flow.graph';

/** Options of `rerunFlow`. */
export interface RerunFlowOptions {
  /** The node to run again; every node downstream of it (transitively) runs again too. */
  from: string;
}

/** The option names of `rerunFlow` (anything else is refused as misspelt). */
export const RERUN_FLOW_OPTION_NAMES = optionNames<RerunFlowOptions>({ from: true });

/** `from` and every node that depends on it, directly or not (names, each once; linear in the graph's size). */
function downstreamOf(nodes: readonly { name: string; deps: readonly string[] }[], from: string): string[] {
  const dependants = new Map<string, string[]>();
  for (const n of nodes) {
    for (const d of n.deps) {
      if (!dependants.has(d)) dependants.set(d, []);
      dependants.get(d)!.push(n.name);
    }
  }
  return reachable([from], (name) => dependants.get(name) ?? []);
}

/**
 * `rerunFlow`'s transaction: replaces node `from` and its downstream nodes by fresh runs (same
 * workflow, input, key, deps), which wait for their deps again as in a new flow; the runs they
 * replace leave the flow and stay as runs of their own. The flow's row is locked first (appends and
 * other reruns of the flow wait), the nodes to rerun are locked for update (every one must have
 * finished: `NotFinishedError` otherwise) and their deps outside the rerun are share-locked, so none
 * finishes unseen: those already final resolve the fresh edges at once. Returns node name → new run id;
 * the workflows of the keys handed over are pushed to `handedOff`, those of the fresh nodes cancelled
 * at once (a dep outside the rerun that failed, was cancelled or is gone) to `cancelled`.
 */
export async function rerunNodes(
  q: Queryable,
  store: FlowsStore,
  keys: FlowKeys,
  flowId: string,
  from: string,
  handedOff: string[],
  cancelled: string[],
): Promise<Record<string, string>> {
  const flow = await store.touchFlow(q, flowId);
  if (!flow) throw new RunNotFoundError(flowId);
  const graph = await store.graph(q, flowId);
  if (!graph.some((n) => n.name === from)) {
    assertValid(`rerunFlow ${flowId}`, [problem('from', from, 'knownNode', `flow ${flowId} has no node "${from}"`)]);
  }
  const names = downstreamOf(
    graph.map((n) => ({ name: n.name, deps: n.deps ?? [] })),
    from,
  );
  const old = await store.lockForRerun(q, flowId, names);
  const going = old.find((r) => !isFinished(r.status));
  if (going) throw new NotFinishedError(going.id);
  // a key tombstone has no input to run again with
  const pruned = old.find((r) => r.pruned);
  if (pruned) throw RunNotFoundError.pruned(pruned.id, `node "${pruned.name}" cannot run again`);
  const rerun = new Set(old.map((r) => r.name));
  const outside = await store.lockNodes(q, flowId, [...new Set(old.flatMap((r) => r.deps).filter((d) => !rerun.has(d)))]);
  // UUIDv7s made in the same millisecond are not ordered: sorted, they follow the old ids' order
  const ids = old.map(() => uuidv7()).sort();
  const keyed = old.flatMap((r, i) => (r.key === null ? [] : [{ id: ids[i], workflow: r.workflow, key: r.key }]));
  await keys.handOff(q, await keys.decide(q, keyed, `rerunFlow ${flowId}`), 'rerunFlow', handedOff);
  await store.detach(
    q,
    old.map((r) => r.id),
  );
  const trace = traceCarrier();
  await store.insertNodes(
    q,
    old.map((r, i) => ({
      id: ids[i],
      workflow: r.workflow,
      key: r.key,
      input: r.input,
      timeout_ms: r.timeout_ms,
      priority: r.priority,
      group_key: r.group_key,
      flow_id: flowId,
      flow_name: flow.name,
      name: r.name,
      deps: r.deps,
      deps_left: r.deps.length,
      trace,
    })),
  );
  const deleted = await store.moveEdges(
    q,
    flowId,
    old.map((r) => r.id),
    ids,
  );
  const finals = outside.filter((d) => isFinished(d.status));
  await store.resolve(
    q,
    flowId,
    [...finals.map((d) => d.name), ...deleted],
    [...finals.map((d) => depOutcome(d.status)!), ...deleted.map((): DepOutcome => 'deleted')],
    cancelled,
  );
  return Object.fromEntries(old.map((r, i) => [r.name, ids[i]]));
}
