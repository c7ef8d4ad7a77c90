import type { FlowGraph } from '../flows/flow.graph';
import { markup, type SafeHtml } from './html';

/**
 * A bar chart of counts over time as inline SVG (no script, no style attribute: classes only).
 * Each bar has a `<title>` with its bucket and count.
 */
export function barChart(points: { bucket: Date; count: number }[], label: string): SafeHtml {
  const width = 600;
  const height = 120;
  const max = Math.max(1, ...points.map((p) => p.count));
  const step = points.length ? width / points.length : width;
  const bars = points.map((p, i) => {
    const h = Math.max(1, Math.round((p.count / max) * (height - 20)));
    return markup`<rect class="bar" x="${(i * step + 1).toFixed(1)}" y="${height - h}" width="${Math.max(1, step - 2).toFixed(1)}" height="${h}"
      ><title>${p.bucket.toISOString()}: ${p.count}</title></rect
    >`;
  });
  return markup`<svg
    class="chart"
    role="img"
    aria-label="${label}"
    viewBox="0 0 ${width} ${height}"
    width="${width}"
    height="${height}"
    xmlns="http://www.w3.org/2000/svg"
  >
    <text class="axis" x="0" y="12">max ${max}</text>
    ${points.length ? bars : markup`<text class="axis" x="0" y="60">no re-adds in the last day</text>`}
    <line class="axis-line" x1="0" y1="${height}" x2="${width}" y2="${height}" />
  </svg>`;
}

/** Column of each node: the longest path of deps that leads to it. */
function layers(graph: FlowGraph): Map<string, number> {
  const depth = new Map<string, number>();
  const byName = new Map(graph.nodes.map((n) => [n.name, n]));
  const visit = (name: string, seen: Set<string>): number => {
    const known = depth.get(name);
    if (known !== undefined) return known;
    if (seen.has(name)) return 0;
    seen.add(name);
    const deps = byName.get(name)?.deps ?? [];
    const d = deps.length ? 1 + Math.max(...deps.map((x) => (byName.has(x) ? visit(x, seen) : 0))) : 0;
    depth.set(name, d);
    return d;
  };
  for (const n of graph.nodes) visit(n.name, new Set());
  return depth;
}

/**
 * A flow's graph as SVG: nodes in columns by depth, each a link to its run, classed by its status
 * (`node status-completed`, …), edges from each dep to its dependant.
 */
export function flowSvg(graph: FlowGraph, runHref: (runId: string) => string): SafeHtml {
  const depth = layers(graph);
  const rows = new Map<number, number>();
  const at = new Map<string, { x: number; y: number }>();
  const W = 170;
  const H = 44;
  for (const n of graph.nodes) {
    const col = depth.get(n.name) ?? 0;
    const row = rows.get(col) ?? 0;
    rows.set(col, row + 1);
    at.set(n.name, { x: 10 + col * (W + 50), y: 10 + row * (H + 20) });
  }
  const width = 20 + Math.max(1, ...[...rows.keys()].map((c) => c + 1)) * (W + 50);
  const height = 20 + Math.max(1, ...rows.values()) * (H + 20);
  const edges = graph.edges.map((e) => {
    const a = at.get(e.from);
    const b = at.get(e.to);
    if (!a || !b) return '';
    return markup`<line class="edge" x1="${a.x + W}" y1="${a.y + H / 2}" x2="${b.x}" y2="${b.y + H / 2}" marker-end="url(#arrow)" />`;
  });
  const nodes = graph.nodes.map((n) => {
    const p = at.get(n.name)!;
    const status = n.status ?? 'unknown';
    const box = markup`<rect class="node status-${status}" x="${p.x}" y="${p.y}" width="${W}" height="${H}" rx="6" />
      <text class="node-name" x="${p.x + 8}" y="${p.y + 18}">${n.name}</text
      ><text class="node-status" x="${p.x + 8}" y="${p.y + 35}">${status} · ${n.workflow}</text>`;
    return n.runId ? markup`<a href="${runHref(n.runId)}">${box}</a>` : box;
  });
  return markup`<svg
    class="flow"
    role="img"
    aria-label="flow graph"
    viewBox="0 0 ${width} ${height}"
    width="${width}"
    height="${height}"
    xmlns="http://www.w3.org/2000/svg"
  >
    <defs>
      <marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8" markerHeight="8" orient="auto">
        <path class="arrow" d="M0,0 L10,5 L0,10 z" />
      </marker>
    </defs>
    ${edges}${nodes}
  </svg>`;
}
