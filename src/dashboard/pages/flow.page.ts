import type { FlowGraph } from '../../flows/flow.graph';
import { markup } from '../html';
import { badge, layout, live, table, type PageContext } from '../layout';
import { flowSvg } from '../svg';

/** `/flows/:id`: the flow's graph with each node's status, links to the nodes' runs, its Mermaid and DOT text. */
export function flowPage(ctx: PageContext, graph: FlowGraph): string {
  const runHref = (id: string) => `${ctx.base}/runs/${id}`;
  const rows = graph.nodes.map(
    (n) =>
      markup`<tr>
        <td>${n.name}</td>
        <td>${n.workflow}</td>
        <td>${n.deps.join(', ') || '—'}</td>
        <td>${badge(n.status)}</td>
        <td>${n.runId ? markup`<a class="mono" href="${runHref(n.runId)}">${n.runId}</a>` : '—'}</td>
      </tr>`,
  );
  const body = markup`${live('flow-graph', markup`${flowSvg(graph, runHref)}${table(['node', 'workflow', 'deps', 'status', 'run'], rows)}`)}
    <h2>Mermaid</h2>
    <pre class="source">${graph.toMermaid()}</pre>
    <h2>DOT</h2>
    <pre class="source">${graph.toDot()}</pre>`;
  return layout(ctx, `Flow ${graph.flowName ?? graph.flowId ?? ''}`, body);
}
