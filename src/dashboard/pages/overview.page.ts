import { FINISHED_STATUSES, GOING_STATUSES } from '../../domain/run-info';
import type { NodeInfo, WorkflowInfo } from '../../runs/cluster-reader';
import { markup } from '../html';
import { layout, live, query, table, type PageContext } from '../layout';

const STATUSES = [...GOING_STATUSES, ...FINISHED_STATUSES];

/** A count, with "+" when it reached the cap. */
export function countText(n: number, cap: number): string {
  return n >= cap ? `${cap}+` : String(n);
}

/** `/`: runs per status of each workflow, the lag of the oldest due run, the nodes alive. */
export function overviewPage(ctx: PageContext, d: { workflows: WorkflowInfo[]; nodes: NodeInfo[]; backlog: { pending: number; lagMs: number } }): string {
  const alive = d.nodes.filter((n) => n.alive).length;
  const rows = d.workflows.map(
    (w) =>
      markup`<tr>
        <td><a href="${ctx.base}/workflows/${encodeURIComponent(w.name)}">${w.name}</a></td>
        ${STATUSES.map((st) => {
          const n = w.counts[st];
          return markup`<td class="num">
            ${n ? markup`<a href="${ctx.base}/runs${query({ q: `workflow:${w.name} status:${st}` })}">${countText(n, w.countsCap)}</a>` : '0'}
          </td>`;
        })}
      </tr>`,
  );
  const body = markup`${live(
    'overview-figures',
    markup`<dl class="figures">
        <div>
          <dt>Due pending runs</dt>
          <dd>${d.backlog.pending}</dd>
        </div>
        <div>
          <dt>Lag of the oldest due run</dt>
          <dd>${(d.backlog.lagMs / 1000).toFixed(1)} s</dd>
        </div>
        <div>
          <dt>Nodes alive</dt>
          <dd><a href="${ctx.base}/nodes">${alive} / ${d.nodes.length}</a></dd>
        </div>
      </dl>
      <h2>Runs by status</h2>
      ${table(['workflow', ...STATUSES], rows, 'no workflow is registered on this node')}`,
  )}`;
  return layout(ctx, 'Overview', body);
}
