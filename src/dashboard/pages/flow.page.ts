import { isFinished } from '../../domain/run-info';
import { reachable, type FlowGraph, type FlowGraphNode } from '../../flows/flow.graph';
import { markup, raw, type SafeHtml } from '../html';
import { badge, layout, live, table, type PageContext } from '../layout';
import { flowSvg } from '../svg';

/**
 * The nodes `rerunFlow` would take as `from` now: a node still going blocks the rerun of itself and
 * of every node upstream of it (a rerun needs `from` and everything downstream finished).
 */
function rerunnable(graph: FlowGraph): Set<string> {
  const deps = new Map(graph.nodes.map((n) => [n.name, n.deps]));
  const going = graph.nodes.filter((n) => !n.status || !isFinished(n.status)).map((n) => n.name);
  const blocked = new Set(reachable(going, (name) => deps.get(name) ?? []));
  return new Set(graph.nodes.map((n) => n.name).filter((name) => !blocked.has(name)));
}

/** The form that runs node `n` and its downstream nodes again. */
function rerunForm(ctx: PageContext, flowId: string, n: FlowGraphNode): SafeHtml {
  return markup`<form class="action" method="post" action="${ctx.base}/flows/${encodeURIComponent(flowId)}/rerun"><input type="hidden" name="from" value="${n.name}"><button>Rerun from here</button></form>`;
}

/**
 * `/flows/:id`: the flow's graph with each node's status, links to the nodes' runs, its Mermaid and
 * DOT text; with actions on, a node can be run again with everything downstream of it once they have all finished.
 */
export function flowPage(ctx: PageContext, graph: FlowGraph): string {
  const runHref = (id: string) => `${ctx.base}/runs/${id}`;
  const { flowId } = graph;
  // with actions on, the nodes that can be run again now (with everything downstream) get a button
  const canRerun = ctx.actions && flowId ? rerunnable(graph) : new Set<string>();
  const rows = graph.nodes.map(
    (n) =>
      markup`<tr>
        <td>${n.name}</td>
        <td>${n.workflow}</td>
        <td>${n.deps.join(', ') || '—'}</td>
        <td>${badge(n.status)}</td>
        <td>${n.runId ? markup`<a class="mono" href="${runHref(n.runId)}">${n.runId}</a>` : '—'}</td>
        <td>${flowId && canRerun.has(n.name) ? rerunForm(ctx, flowId, n) : raw('')}</td>
      </tr>`,
  );
  const body = markup`${live('flow-graph', markup`${flowSvg(graph, runHref)}${table(['node', 'workflow', 'deps', 'status', 'run', ''], rows)}`)}
    <h2>Mermaid</h2>
    <pre class="source">${graph.toMermaid()}</pre>
    <h2>DOT</h2>
    <pre class="source">${graph.toDot()}</pre>`;
  return layout(ctx, `Flow ${graph.flowName ?? graph.flowId ?? ''}`, body);
}
