import type { RunStatus } from '../domain/run-info';

/** One vertex of a flow graph: a node's name, its workflow and (for a started flow) its run. */
export interface FlowGraphNode {
  name: string;
  workflow: string;
  deps: string[];
  /** Set on the graph of a started flow (`getFlowGraph`). */
  runId?: string;
  status?: RunStatus;
}

/**
 * `starts` and every name reached from them through `next` (each once, in the order reached; linear
 * in the names and links visited): downstream with a node's dependants, upstream with its deps.
 */
export function reachable(starts: readonly string[], next: (name: string) => readonly string[]): string[] {
  const out = [...new Set(starts)];
  const seen = new Set(out);
  for (let i = 0; i < out.length; i++) {
    for (const name of next(out[i])) {
      if (!seen.has(name)) {
        seen.add(name);
        out.push(name);
      }
    }
  }
  return out;
}

/** An edge `from → to`: `to` depends on `from`. */
export interface FlowGraphEdge {
  from: string;
  to: string;
}

/**
 * A flow as a directed acyclic graph (what `toGraph()` and `getFlowGraph()` return). Vertices are
 * node names, in the order the nodes were added; edges run from a dep to its dependant.
 */
export class FlowGraph {
  readonly nodes: FlowGraphNode[];
  readonly edges: FlowGraphEdge[];

  constructor(
    nodes: FlowGraphNode[],
    readonly flowId: string | null = null,
    readonly flowName: string | null = null,
  ) {
    this.nodes = nodes;
    const edges: FlowGraphEdge[] = [];
    const index = new Map(nodes.map((n, i) => [n.name, i]));
    // edges grouped by their source, sources in node order (as docs/flows.md draws it)
    const out = new Map<string, string[]>();
    for (const n of nodes) {
      for (const d of n.deps) {
        if (!out.has(d)) out.set(d, []);
        out.get(d)!.push(n.name);
      }
    }
    const sources = [...out.keys()].sort((a, b) => (index.get(a) ?? -1) - (index.get(b) ?? -1));
    for (const from of sources) for (const to of out.get(from)!) edges.push({ from, to });
    this.edges = edges;
  }

  /** The node named `name`, or undefined. */
  node(name: string): FlowGraphNode | undefined {
    return this.nodes.find((n) => n.name === name);
  }

  /** Names of the nodes that depend on `name`. */
  dependants(name: string): string[] {
    return this.edges.filter((e) => e.from === name).map((e) => e.to);
  }

  /**
   * A Mermaid flowchart: `flowchart TD`, then one line per edge `a[Workflow] --> b[Workflow]`
   * (and one per node without edges). On a started flow each vertex gets a class named after its
   * status (`classDef` lines at the end).
   */
  toMermaid(): string {
    const ids = mermaidIds(this.nodes.map((n) => n.name).concat(this.edges.map((e) => e.from)));
    const byName = new Map(this.nodes.map((n) => [n.name, n]));
    const vertex = (name: string) => {
      const n = byName.get(name);
      const id = ids.get(name)!;
      const label = n ? n.workflow : name;
      return `${id}[${mermaidLabel(label)}]`;
    };
    const lines = ['flowchart TD'];
    const linked = new Set<string>();
    for (const e of this.edges) {
      lines.push(`    ${vertex(e.from)} --> ${vertex(e.to)}`);
      linked.add(e.from).add(e.to);
    }
    for (const n of this.nodes) if (!linked.has(n.name)) lines.push(`    ${vertex(n.name)}`);
    const withStatus = this.nodes.filter((n) => n.status);
    if (withStatus.length) {
      const byStatus = new Map<string, string[]>();
      for (const n of withStatus) {
        if (!byStatus.has(n.status!)) byStatus.set(n.status!, []);
        byStatus.get(n.status!)!.push(ids.get(n.name)!);
      }
      for (const [status, members] of byStatus) {
        lines.push(`    classDef ${status} ${STATUS_STYLE[status as RunStatus] ?? 'fill:#eee'}`);
        lines.push(`    class ${members.join(',')} ${status}`);
      }
    }
    return lines.join('\n') + '\n';
  }

  /** A Graphviz digraph: one vertex per node labelled `name\nWorkflow` (and status), one edge per dep. */
  toDot(): string {
    const q = (s: string) => `"${s.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`;
    const lines = [`digraph ${q(this.flowName ?? this.flowId ?? 'flow')} {`, '  rankdir=TB;'];
    for (const n of this.nodes) {
      const label = [n.name, n.workflow, n.status].filter(Boolean).join('\n');
      lines.push(`  ${q(n.name)} [label=${q(label)}${n.status ? `, tooltip=${q(n.status)}` : ''}];`);
    }
    for (const e of this.edges) lines.push(`  ${q(e.from)} -> ${q(e.to)};`);
    lines.push('}');
    return lines.join('\n') + '\n';
  }

  /** Plain data (JSON). */
  toJSON() {
    return { flowId: this.flowId, flowName: this.flowName, nodes: this.nodes, edges: this.edges };
  }
}

const STATUS_STYLE: Partial<Record<RunStatus, string>> = {
  pending: 'fill:#fff,stroke:#999',
  waiting: 'fill:#f5f5f5,stroke:#bbb,stroke-dasharray:3',
  running: 'fill:#dbeafe,stroke:#2563eb',
  compensating: 'fill:#fef3c7,stroke:#d97706',
  completed: 'fill:#dcfce7,stroke:#16a34a',
  failed: 'fill:#fee2e2,stroke:#dc2626',
  cancelled: 'fill:#e5e7eb,stroke:#6b7280',
  compensated: 'fill:#fef3c7,stroke:#92400e',
  compensation_failed: 'fill:#fecaca,stroke:#7f1d1d',
};

/** Mermaid vertex ids: the name itself when it is a plain identifier, else a sanitised unique one. */
function mermaidIds(names: string[]): Map<string, string> {
  const ids = new Map<string, string>();
  const used = new Set<string>();
  for (const name of names) {
    if (ids.has(name)) continue;
    let id = /^[A-Za-z_][A-Za-z0-9_]*$/.test(name) && !RESERVED.has(name) ? name : `n_${name.replace(/[^A-Za-z0-9_]/g, '_')}`;
    for (let i = 2; used.has(id); i++) id = `${id}_${i}`;
    used.add(id);
    ids.set(name, id);
  }
  return ids;
}

const RESERVED = new Set(['end', 'graph', 'flowchart', 'subgraph', 'class', 'classDef', 'click', 'style', 'linkStyle']);

/**
 * A vertex label: bare when safe, else quoted with Mermaid's entity escapes (`#` first: Mermaid reads
 * `#…;` in a label as an entity, so a name such as `w#1;` would lose its characters).
 */
function mermaidLabel(label: string): string {
  if (/^[A-Za-z0-9_.:\- ]+$/.test(label)) return label;
  return `"${label.replace(/#/g, '#35;').replace(/"/g, '#quot;')}"`;
}
