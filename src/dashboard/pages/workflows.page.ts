import type { RunInfo } from '../../domain/run-info';
import type { WorkflowInfo } from '../../runs/cluster-reader';
import type { KeyInfo, KeyStats } from '../../runs/key-insights';
import type { ScheduleInfo } from '../../schedules/schedule-info';
import { markup, json, raw, when } from '../html';
import { layout, query, table, type PageContext } from '../layout';
import { searchValue } from '../search';
import { barChart } from '../svg';
import { KEY_HEAD, keyRows } from './keys.page';
import { countText } from './overview.page';
import { RUN_HEAD, runRows } from './runs.page';

/** `/workflows`: each registered workflow with its options, steps and runs per status. */
export function workflowsPage(ctx: PageContext, workflows: WorkflowInfo[]): string {
  const rows = workflows.map(
    (w) =>
      markup`<tr>
        <td><a href="${ctx.base}/workflows/${encodeURIComponent(w.name)}">${w.name}</a>${w.paused ? ' (paused)' : ''}</td>
        <td>${w.steps.join(' → ')}</td>
        <td>${w.options.reuse}</td>
        <td>${typeof w.options.onDuplicate === 'string' ? w.options.onDuplicate : `sendEvent ${w.options.onDuplicate.sendEvent}`}</td>
        <td>
          ${
            Object.entries(w.counts)
              .filter(([, n]) => n > 0)
              .map(([st, n]) => `${st} ${countText(n, w.countsCap)}`)
              .join(', ') || 'no runs'
          }
        </td>
      </tr>`,
  );
  return layout(ctx, 'Workflows', table(['workflow', 'steps', 'reuse', 'onDuplicate', 'runs'], rows, 'no workflow is registered on this node'));
}

/** What the workflow page shows. */
export interface WorkflowPageData {
  workflow: WorkflowInfo;
  recent: RunInfo[];
  stats: KeyStats;
  keys: KeyInfo[];
  /** Its first schedules by name, at most `schedulesLimit`. */
  schedules: ScheduleInfo[];
  schedulesLimit: number;
}

/** `/workflows/:name`: its definition, counts, recent runs, Keys section (with a chart of re-adds) and schedules. */
export function workflowPage(ctx: PageContext, d: WorkflowPageData): string {
  const { workflow: w, stats } = d;
  const top = stats.topKeys.map(
    (k) =>
      markup`<tr>
        <td class="mono"><a href="${ctx.base}/runs${query({ q: `workflow:${w.name} key:${searchValue(k.key)}` })}">${k.key}</a></td>
        <td class="num">${k.readds}</td>
      </tr>`,
  );
  const schedules = d.schedules.map(
    (s) =>
      markup`<tr>
        <td>${s.name}</td>
        <td class="mono">${s.cron}</td>
        <td>${s.timezone}</td>
        <td>${when(s.nextFireAt)}</td>
      </tr>`,
  );
  const counts = Object.entries(w.counts).map(
    ([st, n]) =>
      markup`<tr>
        <td>${st}</td>
        <td class="num">${n ? markup`<a href="${ctx.base}/runs${query({ q: `workflow:${w.name} status:${st}` })}">${countText(n, w.countsCap)}</a>` : '0'}</td>
      </tr>`,
  );
  const toggle = w.paused ? { action: 'resume', label: 'Resume' } : { action: 'pause', label: 'Pause' };
  const body = markup`<h2>Definition</h2>
    <dl class="facts">
      <dt>steps</dt>
      <dd>${w.steps.join(' → ')}</dd>
      <dt>paused</dt>
      <dd>${w.paused ? 'yes: its runs are not claimed until it is resumed' : 'no'}</dd>
    </dl>
    ${
      ctx.actions
        ? markup`<form class="action" method="post" action="${ctx.base}/workflows/${encodeURIComponent(w.name)}/${toggle.action}"><button>${toggle.label}</button></form>`
        : raw('')
    }
    <pre>${json(w.options)}</pre>
    <h2>Runs by status</h2>
    ${table(['status', 'runs'], counts)}
    <h2>Recent runs</h2>
    ${table(RUN_HEAD, runRows(ctx, d.recent), 'no runs')}
    <section id="keys-section">
      <h2>Keys</h2>
      <dl class="figures">
        <div>
          <dt>Keys held</dt>
          <dd>${stats.keysHeld}</dd>
        </div>
        <div>
          <dt>Dropped inputs</dt>
          <dd>${stats.droppedInputs}</dd>
        </div>
        <div>
          <dt>Hand-offs</dt>
          <dd>${stats.handoffs}</dd>
        </div>
        ${Object.entries(stats.readdsByOutcome).map(
          ([o, n]) =>
            markup`<div>
              <dt>Re-adds: ${o}</dt>
              <dd>${n}</dd>
            </div>`,
        )}
      </dl>
      <h3>Re-adds over the last day (per hour)</h3>
      ${barChart(stats.readdsOverTime, `re-adds of ${w.name} per hour`)}
      <h3>Top keys</h3>
      ${table(['key', 're-adds'], top, 'no re-adds')}
      <h3>Keys</h3>
      ${table(KEY_HEAD, keyRows(ctx, d.keys), 'no key')}
      <p><a href="${ctx.base}/keys${query({ workflow: w.name })}">all keys of ${w.name} →</a></p>
    </section>
    <h2>Schedules</h2>
    ${table(['name', 'cron', 'time zone', 'next'], schedules, 'none')}
    ${
      d.schedules.length >= d.schedulesLimit
        ? markup`<p><a href="${ctx.base}/schedules${query({ workflow: w.name })}">all schedules of ${w.name} →</a></p>`
        : ''
    }`;
  return layout(ctx, `Workflow ${w.name}`, body);
}
