import { isFinished, type RunInfo } from '../../domain/run-info';
import type { StartExplanation } from '../../domain/keys.explain';
import type { ActivityEvent } from '../../runs/key-insights';
import { attemptLabel, type StepAttempt } from '../../runs/run-reader';
import { jsonDiff } from '../diff';
import { markup, json, raw, when, type SafeHtml } from '../html';
import { badge, layout, live, table, type PageContext } from '../layout';
import { RUN_HEAD, runRows } from './runs.page';

/** What the run page shows besides the run. */
export interface RunPageData {
  run: RunInfo;
  history: StepAttempt[];
  /** Runs with the run's key (newest first, bounded). */
  keyRuns: RunInfo[];
  /** The run's re-adds (`key_duplicate` events), newest first. */
  readds: ActivityEvent[];
  /** Hand-offs, releases and retakes of the key. */
  keyEvents: ActivityEvent[];
  /** What a start with the key (and the workflow's own `onDuplicate`) would do now. */
  startNow?: StartExplanation;
}

const pre = (value: unknown): SafeHtml => markup`<pre>${json(value)}</pre>`;

/** A value of a diff: its JSON, or "absent". */
const shown = (v: unknown): string => (v === undefined ? '(absent)' : JSON.stringify(v));

/** The dropped input of a re-add against the run's input, per changed JSON path: the holder's in `<del>`, the dropped one in `<ins>`. */
export function inputDiff(holderInput: unknown, dropped: unknown): SafeHtml {
  const changes = jsonDiff(holderInput, dropped);
  if (!changes.length) return markup`<p class="same">same input</p>`;
  return markup`<ul class="diff">
    ${changes.map((c) => markup`<li><code>${c.path}</code> <del>${shown(c.before)}</del> <ins>${shown(c.after)}</ins></li>`)}
  </ul>`;
}

function actionForm(ctx: PageContext, runId: string, action: string, label: string, fields: SafeHtml = raw('')): SafeHtml {
  return markup`<form class="action" method="post" action="${ctx.base}/runs/${runId}/${action}">${fields}<button>${label}</button></form>`;
}

/** The actions the run allows in its status (when the dashboard is not read-only). */
function actions(ctx: PageContext, run: RunInfo): SafeHtml {
  if (!ctx.actions) return raw('');
  const forms: SafeHtml[] = [];
  const finished = isFinished(run.status);
  if (!finished) forms.push(actionForm(ctx, run.id, 'cancel', 'Cancel'));
  if (run.status === 'failed') forms.push(actionForm(ctx, run.id, 'retry', 'Retry'));
  if (finished) forms.push(actionForm(ctx, run.id, 'rerun', 'Rerun'));
  if (finished && run.holdsKey) forms.push(actionForm(ctx, run.id, 'release-key', 'Release key'));
  if (run.waitingFor?.kind === 'input') {
    forms.push(
      actionForm(
        ctx,
        run.id,
        'provide-input',
        'Provide input',
        markup`<input type="hidden" name="name" value="${run.waitingFor.name ?? ''}" /><label
            >Input <code>${run.waitingFor.name ?? ''}</code> (JSON) <textarea name="value" rows="3" required>null</textarea>
          </label>`,
      ),
    );
  }
  if (!finished) {
    forms.push(
      actionForm(
        ctx,
        run.id,
        'send-event',
        'Send event',
        markup`<label>Event <input name="name" required /></label><label>Payload (JSON) <textarea name="payload" rows="2">null</textarea></label>`,
      ),
    );
  }
  return markup`<section class="actions">
    <h2>Actions</h2>
    ${forms}
  </section>`;
}

function keyPanel(ctx: PageContext, d: RunPageData): SafeHtml {
  const { run } = d;
  if (run.key === null) return raw('');
  const holder = d.keyRuns.find((r) => r.holdsKey);
  const readds = d.readds.map((e) => {
    const dt = e.details as { outcome?: string; inputChanged?: boolean; input?: unknown };
    return markup`<li>
      <span class="badge">${dt.outcome ?? '?'}</span> ${when(e.at)}
      ${dt.inputChanged ? inputDiff(run.input, dt.input) : markup`<span class="same">same input</span>`}
    </li>`;
  });
  const events = d.keyEvents.map(
    (e) =>
      markup`<tr>
        <td>${e.kind}</td>
        <td>${when(e.at)}</td>
        <td><pre>${json(e.details)}</pre></td>
      </tr>`,
  );
  return markup`<section class="key-panel" id="key-panel">
    <h2>Key</h2>
    <dl class="facts">
      <dt>key</dt>
      <dd class="mono">${run.key}</dd>
      <dt>holder</dt>
      <dd>${holder ? markup`<a class="mono" href="${ctx.base}/runs/${holder.id}">${holder.id}</a> ${badge(holder.status)}` : 'nobody holds it'}</dd>
    </dl>
    ${d.startNow ? markup`<p class="start-now">a start with this key now: <span class="badge">${d.startNow.outcome}</span> — ${d.startNow.reason}</p>` : ''}
    <p class="readds">added again <strong>${run.readds}</strong> times</p>
    ${
      readds.length
        ? markup`<ol class="readds-list">
            ${readds}
          </ol>`
        : ''
    }
    <h3>Every run with this key</h3>
    ${table(RUN_HEAD, runRows(ctx, d.keyRuns))}
    <h3>Hand-offs and releases</h3>
    ${table(['event', 'at', 'details'], events, 'none')}
  </section>`;
}

/** `/runs/:id`: the run, its step timeline, its waits and family, and its Key panel. */
export function runPage(ctx: PageContext, d: RunPageData): string {
  const { run } = d;
  const link = (id: string | null) => (id ? markup`<a class="mono" href="${ctx.base}/runs/${id}">${id}</a>` : '—');
  const timeline = d.history.map(
    (h) =>
      markup`<tr>
        <td>${attemptLabel(h)}</td>
        <td class="num">${h.attempt}</td>
        <td>${badge(h.status)}</td>
        <td>${when(h.startedAt)}</td>
        <td>${when(h.finishedAt)}</td>
        <td class="mono">${h.nodeId ?? ''}</td>
        <td>${h.error ? pre(h.error) : ''}</td>
      </tr>`,
  );
  const body = markup`${live(
    'run-status',
    markup`<dl class="facts">
          <dt>status</dt>
          <dd>${badge(run.status)}</dd>
          <dt>workflow</dt>
          <dd><a href="${ctx.base}/workflows/${encodeURIComponent(run.workflow)}">${run.workflow}</a></dd>
          <dt>step</dt>
          <dd>${run.step ?? '—'} (attempt ${run.attempt})</dd>
          <dt>progress</dt>
          <dd>${run.progress === null ? '—' : markup`<code class="progress">${JSON.stringify(run.progress)}</code>`}</dd>
          <dt>waiting for</dt>
          <dd>
            ${run.waitingFor ? markup`${run.waitingFor.kind} ${run.waitingFor.name ?? ''} ${run.waitingFor.until ? `until ${when(run.waitingFor.until)}` : ''}` : '—'}
          </dd>
          <dt>created</dt>
          <dd>${when(run.createdAt)}</dd>
          <dt>started</dt>
          <dd>${when(run.startedAt)}</dd>
          <dt>finished</dt>
          <dd>${when(run.finishedAt)}</dd>
          <dt>parent</dt>
          <dd>${link(run.parentId)}</dd>
          <dt>children</dt>
          <dd>${run.children.length ? run.children.map((c) => markup`${link(c)} `) : '—'}</dd>
          <dt>flow</dt>
          <dd>
            ${run.flowId ? markup`<a href="${ctx.base}/flows/${encodeURIComponent(run.flowId)}">${run.flowName ?? run.flowId}</a> (node ${run.name ?? ''})` : '—'}
          </dd>
        </dl>
        <h2>Step timeline</h2>
        ${table(['step', 'attempt', 'outcome', 'started', 'finished', 'node', 'error'], timeline, 'no step attempt yet')}`,
  )}
    ${actions(ctx, run)}
    <h2>Input</h2>
    ${pre(run.input)}
    <h2>Context</h2>
    ${pre(run.context)}
    <h2>Result</h2>
    ${pre(run.result)}${
      run.error
        ? markup`<h2>Error</h2>
            ${pre(run.error)}`
        : ''
    }
    ${keyPanel(ctx, d)}`;
  return layout(ctx, `Run ${run.id}`, body);
}
