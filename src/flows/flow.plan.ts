import { assertValid, jsonProblem, keyProblem, nameProblem, optionsObjectProblem, problem, Problems, unknownOptionProblems } from '../domain/validation';
import type { WorkflowRegistry } from '../definition/workflow.registry';
import { groupOf } from '../definition/workflow-definition';
import { FLOW_NODE_OPTION_NAMES, FLOW_OPTION_NAMES, FlowBuilder } from './flow.builder';

/** A validated node, ready to insert. */
export interface PlannedNode {
  name: string;
  workflow: string;
  input: unknown;
  /** The node's key (null: none). */
  key: string | null;
  timeoutMs: number | null;
  /** The workflow's priority. */
  priority: number;
  /** The group its workflow's limits count it in (null without limits). */
  group: string | null;
  deps: string[];
  ignore: { cancelled?: boolean; failed?: boolean; deleted?: boolean };
}

/** Every check that needs no database, with all problems in one error. */
export function planFlow(builder: FlowBuilder, registry: WorkflowRegistry): PlannedNode[] {
  if (!(builder instanceof FlowBuilder)) {
    assertValid('startFlow', [problem('flow', builder, 'isFlowBuilder', 'expects a FlowBuilder from durable.flow() or durable.appendFlow()')]);
  }
  const p = new Problems();
  const o = builder.options ?? {};
  if (!builder.appendTo) {
    p.push(optionsObjectProblem(o, 'options', FLOW_OPTION_NAMES));
    unknownOptionProblems(o, FLOW_OPTION_NAMES).forEach((e) => p.push(e));
    if (o.id !== undefined && nameProblem(o.id)) {
      p.add('id', o.id, 'flowId', 'flow id must be a string of 1 to 255 bytes, without a NUL character or a lone surrogate');
    }
    if (o.name !== undefined && o.name !== null && o.name !== '' && nameProblem(o.name)) {
      p.add('name', o.name, 'flowName', 'flow name must be a string of at most 255 bytes, without a NUL character or a lone surrogate');
    }
    for (const k of ['ignoreCancelled', 'ignoreFailed', 'ignoreDeleted'] as const) {
      if (o[k] !== undefined && typeof o[k] !== 'boolean') p.add(k, o[k], 'isBoolean', `${k} must be a boolean`);
    }
  }
  const nodes = builder.nodes;
  if (nodes.length === 0) p.add('nodes', [], 'notEmpty', 'a flow needs at least one node (call add())');
  const names = new Set<string>();
  /** workflow + NUL + key → the first node holding it */
  const keys = new Map<string, string>();
  const planned: PlannedNode[] = [];
  for (const [i, n] of nodes.entries()) {
    const at = typeof n.name === 'string' ? `node "${n.name}"` : `node #${i}`;
    if (nameProblem(n.name)) {
      p.add(`nodes[${i}].name`, n.name, 'nodeName', `${at}: a node name must be a string of 1 to 255 bytes, without a NUL character or a lone surrogate`);
    } else if (names.has(n.name)) {
      p.add(`nodes[${i}].name`, n.name, 'uniqueName', `duplicate node name "${n.name}"`);
    } else names.add(n.name);
    const def = typeof n.workflow === 'string' ? registry.find(n.workflow) : undefined;
    if (!def) p.add(`nodes[${i}].workflow`, n.workflow, 'knownWorkflow', `${at}: unknown workflow "${String(n.workflow)}"`);
    p.push(jsonProblem(n.input, `${at} input`));
    const deps: string[] = [];
    if (!Array.isArray(n.deps) || n.deps.some((d) => nameProblem(d))) {
      p.add(`nodes[${i}].deps`, n.deps, 'deps', `${at}: deps must be an array of node names (1 to 255 bytes each)`);
    } else {
      for (const d of n.deps) if (!deps.includes(d)) deps.push(d);
    }
    p.push(optionsObjectProblem(n.options, `${at}: options`, FLOW_NODE_OPTION_NAMES));
    unknownOptionProblems(n.options, FLOW_NODE_OPTION_NAMES, `nodes[${i}].`).forEach((e) => p.push(e));
    const keyBad = keyProblem(n.options?.key, `nodes[${i}].key`);
    const key = keyBad ? null : (n.options?.key ?? null);
    p.push(keyBad);
    if (key !== null) {
      const id = `${String(n.workflow)}\u0000${key}`;
      const first = keys.get(id);
      if (first === undefined) keys.set(id, String(n.name));
      else
        p.add(
          `nodes[${i}].key`,
          key,
          'uniqueKey',
          `${at}: key ${JSON.stringify(key)} of workflow "${String(n.workflow)}" is already the key of node "${first}"`,
        );
    }
    for (const k of ['ignoreCancelled', 'ignoreFailed', 'ignoreDeleted'] as const) {
      const v = n.options?.[k];
      if (v !== undefined && typeof v !== 'boolean') p.add(`nodes[${i}].${k}`, v, 'isBoolean', `${at}: ${k} must be a boolean`);
    }
    planned.push({
      name: n.name,
      workflow: n.workflow,
      input: n.input ?? null,
      key,
      timeoutMs: def?.timeoutMs ?? null,
      priority: def?.priority ?? 0,
      group: def ? groupOf(def, key, n.input ?? null) : null,
      deps,
      ignore: { cancelled: n.options?.ignoreCancelled, failed: n.options?.ignoreFailed, deleted: n.options?.ignoreDeleted },
    });
  }
  for (const n of planned) {
    for (const d of n.deps) {
      if (d === n.name) p.add('deps', d, 'noCycle', `node "${n.name}" depends on itself`);
      else if (!names.has(d) && !builder.appendTo) {
        p.add('deps', d, 'knownDep', `node "${n.name}" depends on "${d}", which is not a node of this flow`);
      }
    }
  }
  const cycle = findCycle(planned, names);
  if (cycle) p.add('deps', cycle, 'noCycle', `the deps form a cycle: ${cycle.join(' → ')}`);
  p.throwIfAny(builder.appendTo ? `appendFlow ${builder.appendTo.flowId}` : 'startFlow');
  return planned;
}

/** A cycle among the nodes' deps (names in dependency order), or undefined (Kahn's algorithm, no recursion). */
export function findCycle(nodes: { name: string; deps: string[] }[], names: Set<string>): string[] | undefined {
  const deps = new Map(nodes.map((n) => [n.name, n.deps.filter((d) => names.has(d) && d !== n.name)]));
  const left = new Map<string, number>();
  const dependants = new Map<string, string[]>();
  for (const [name, ds] of deps) {
    left.set(name, ds.length);
    for (const d of ds) {
      if (!dependants.has(d)) dependants.set(d, []);
      dependants.get(d)!.push(name);
    }
  }
  const ready = [...left].filter(([, n]) => n === 0).map(([name]) => name);
  let done = 0;
  while (ready.length) {
    const name = ready.pop()!;
    done++;
    for (const c of dependants.get(name) ?? []) {
      const n = left.get(c)! - 1;
      left.set(c, n);
      if (n === 0) ready.push(c);
    }
  }
  if (done === deps.size) return undefined;
  // walk deps among the nodes left until one repeats
  let at = [...left].find(([, n]) => n > 0)![0];
  const seen: string[] = [];
  while (!seen.includes(at)) {
    seen.push(at);
    at = deps.get(at)!.find((d) => left.get(d)! > 0)!;
  }
  return [...seen.slice(seen.indexOf(at)), at].reverse();
}
