import type { FlowGraphNode } from '../../flows/flow.graph';
import { markup, raw, type SafeHtml } from '../html';
import { badge, layout, live, query, table, type PageContext } from '../layout';
import { searchValue } from '../search';
import { flowSvg } from '../svg';
import type { FlowView } from '../page-reads';

/** Most nodes of a flow drawn (SVG, Mermaid, DOT) and listed on its page; a bigger flow lists its first ones and counts the rest by status. */
export const FLOW_NODES_SHOWN = 200;

/** The form that runs node `n` and its downstream nodes again. */
function rerunForm(ctx: PageContext, flowId: string, n: FlowGraphNode): SafeHtml {
  return markup`<form class="action" method="post" action="${ctx.base}/flows/${encodeURIComponent(flowId)}/rerun"><input type="hidden" name="from" value="${n.name}"><button>Rerun from here</button></form>`;
}

/** Why node `name` has no rerun button, when `rerunFlow` refuses it for a key tombstone; else nothing. */
function prunedNote({ pruned, tombstones }: FlowView, name: string): SafeHtml | string {
  if (!pruned?.has(name)) return '';
  return markup`<span class="hint">${tombstones?.has(name) ? 'pruned: its input is gone, it cannot run again' : 'cannot run again: a node downstream of it was pruned'}</span>`;
}

/** What the page of a flow too big to draw says instead: its nodes per status, and where to find them all. */
function bigFlowSummary(ctx: PageContext, { graph, total, counts }: FlowView): SafeHtml {
  const search = graph.flowId ? `${ctx.base}/runs${query({ q: `flow:${searchValue(graph.flowId)}` })}` : null;
  return markup`<p class="hint">
      ${total} nodes: a flow of more than ${FLOW_NODES_SHOWN} is not drawn (its Mermaid and DOT text are in
      <code>getFlowGraph</code>); the first ${FLOW_NODES_SHOWN} are listed${search ? markup`, <a href="${search}">all ${total} nodes →</a>` : ''}
    </p>
    <dl class="figures">
      ${counts.map(
        ({ status, n }) =>
          markup`<div>
            <dt>${badge(status)}</dt>
            <dd>${n}</dd>
          </div>`,
      )}
    </dl>`;
}

/**
 * `/flows/:id`: the flow's graph with each node's status, links to the nodes' runs, its Mermaid and
 * DOT text; with actions on, a node can be run again with everything downstream of it once they have all finished.
 * `view.graph` holds the flow's first {@link FLOW_NODES_SHOWN} nodes (all of them when there are no more).
 */
export function flowPage(ctx: PageContext, view: FlowView): string {
  const { graph } = view;
  const runHref = (id: string) => `${ctx.base}/runs/${id}`;
  const { flowId } = graph;
  const big = view.more;
  // with actions on, the nodes that can be run again now (with everything downstream) get a button,
  // as read with the flow; those a key tombstone keeps from it say so
  const canRerun = ctx.actions && flowId ? (view.rerunnable ?? new Set<string>()) : new Set<string>();
  const rows = graph.nodes.map(
    (n) =>
      markup`<tr>
        <td>${n.name}</td>
        <td>${n.workflow}</td>
        <td>${n.deps.join(', ') || '—'}</td>
        <td>${badge(n.status)}</td>
        <td>${n.runId ? markup`<a class="mono" href="${runHref(n.runId)}">${n.runId}</a>` : '—'}</td>
        <td>${flowId && canRerun.has(n.name) ? rerunForm(ctx, flowId, n) : ctx.actions ? prunedNote(view, n.name) : raw('')}</td>
      </tr>`,
  );
  const nodes = table(['node', 'workflow', 'deps', 'status', 'run', ''], rows);
  const body = big
    ? markup`${live('flow-graph', markup`${bigFlowSummary(ctx, view)}${nodes}`)}`
    : markup`${live('flow-graph', markup`${flowSvg(graph, runHref)}${nodes}`)}
        <h2>Mermaid</h2>
        <pre class="source">${graph.toMermaid()}</pre>
        <h2>DOT</h2>
        <pre class="source">${graph.toDot()}</pre>`;
  return layout(ctx, `Flow ${graph.flowName ?? graph.flowId ?? ''}`, body);
}
