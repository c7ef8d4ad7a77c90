import type { NodeInfo } from '../../runs/cluster-reader';
import type { ActivityEvent } from '../../runs/key-insights';
import type { ScheduleInfo } from '../../schedules/schedule-info';
import { CELL_CHARS, markup, json, raw, when } from '../html';
import { layout, live, onwardPager, overviewHref, pager, query, table, type PageContext } from '../layout';

/**
 * `/schedules?workflow=&after=`: a page of stored schedules by name (of `workflow`, when given),
 * with a trigger button when actions are allowed; "next" when the page is full, "first" past the first page.
 */
export function schedulesPage(ctx: PageContext, d: { schedules: ScheduleInfo[]; workflow?: string; after?: string; limit: number }): string {
  const { schedules } = d;
  const href = (after?: string) => `${ctx.base}/schedules${query({ workflow: d.workflow, after })}`;
  const full = schedules.length === d.limit;
  const rows = schedules.map(
    (s) =>
      markup`<tr>
        <td>${s.name}</td>
        <td><a href="${ctx.base}/workflows/${encodeURIComponent(s.workflow)}">${s.workflow}</a></td>
        <td class="mono">${s.cron}</td>
        <td>${s.timezone}</td>
        <td class="mono">${s.key ?? '—'}</td>
        <td>${s.source}</td>
        <td>${when(s.nextFireAt)}</td>
        <td>${when(s.lastFireAt)}</td>
        <td>
          ${ctx.actions ? markup`<form class="action" method="post" action="${ctx.base}/schedules/${encodeURIComponent(s.name)}/trigger"><button>Trigger now</button></form>` : raw('')}
        </td>
      </tr>`,
  );
  const filter = d.workflow
    ? markup`<p class="hint">schedules of <a href="${ctx.base}/workflows/${encodeURIComponent(d.workflow)}">${d.workflow}</a> ·
        <a href="${ctx.base}/schedules">every schedule</a></p>`
    : '';
  const nav = onwardPager(d.after !== undefined ? href() : null, full ? href(schedules[schedules.length - 1].name) : null, 'next →');
  const body = markup`${filter}${table(['name', 'workflow', 'cron', 'time zone', 'key', 'source', 'next', 'last fired', ''], rows, 'no schedule')}${nav}`;
  return layout(ctx, 'Schedules', body);
}

/** `/activity?kind=`: the activity log, newest first, paged back by cursor. */
export function activityPage(ctx: PageContext, d: { events: ActivityEvent[]; kind?: string; limit: number }): string {
  const rows = d.events.map(
    (e) =>
      markup`<tr>
        <td>${when(e.at)}</td>
        <td>${e.kind}</td>
        <td>${e.runId ? markup`<a class="mono" href="${ctx.base}/runs/${e.runId}">${e.runId}</a>` : '—'}</td>
        <td><pre>${json(e.details, CELL_CHARS)}</pre></td>
      </tr>`,
  );
  const next = d.events.length === d.limit ? `${ctx.base}/activity${query({ kind: d.kind, cursor: d.events[d.events.length - 1].id })}` : null;
  const kinds = ['key_duplicate', 'key_handed_off', 'key_released', 'key_retaken', 'dashboard_action'];
  const body = markup`<form class="search-big" method="get" action="${ctx.base}/activity">
      <label
        >Kind
        <select name="kind">
          <option value="">every kind</option>
          ${kinds.map((k) => markup`<option value="${k}" ${k === d.kind ? markup` selected` : ''}>${k}</option>`)}
        </select></label
      ><button>Filter</button>
    </form>
    ${live('activity-list', markup`${table(['at', 'kind', 'run', 'details'], rows, 'no activity')}${pager(null, next)}`)}`;
  return layout(ctx, 'Activity', body);
}

/** `/nodes`: the nodes that heartbeat, alive or not, with their running runs and slots. */
export function nodesPage(ctx: PageContext, nodes: NodeInfo[]): string {
  const rows = nodes.map(
    (n) =>
      markup`<tr>
        <td class="mono">${n.nodeId}</td>
        <td>${n.alive ? markup`<span class="badge status-completed">alive</span>` : markup`<span class="badge status-failed">silent</span>`}</td>
        <td>${when(n.startedAt)}</td>
        <td>${when(n.lastSeenAt)}</td>
        <td class="num">${n.running}</td>
        <td class="num">${n.concurrency ?? '—'}</td>
        <td>${(n.workflows ?? []).join(', ')}</td>
      </tr>`,
  );
  return layout(ctx, 'Nodes', live('nodes-list', table(['node', 'state', 'started', 'last heartbeat', 'running', 'slots', 'workflows'], rows, 'no node')));
}

/** A page that says what went wrong (bad search, unknown run, refused action). */
export function errorPage(ctx: PageContext, title: string, message: string): string {
  return layout(
    ctx,
    title,
    markup`<p class="error" role="alert">${message}</p>
      <p><a href="${overviewHref(ctx)}">back to the overview</a></p>`,
  );
}
