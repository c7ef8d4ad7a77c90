import { attemptLabel, isFinished, type RunInfo } from '../../domain/run-info';
import type { StartExplanation } from '../../domain/keys.explain';
import type { ActivityEvent } from '../../runs/key-insights';
import type { StepAttempt } from '../../runs/run-reader';
import { jsonDiff } from '../diff';
import { CELL_CHARS, clip, markup, json, raw, when, type SafeHtml } from '../html';
import { badge, layout, live, query, table, type PageContext } from '../layout';
import { RUN_HEAD, runRows } from './runs.page';

/** What the run page shows besides the run. */
export interface RunPageData {
  /** The run, with its first {@link CHILDREN_SHOWN} children (by id) in `children`. */
  run: RunInfo;
  /** How many children the run has, up to {@link CHILDREN_COUNTED}. */
  childCount: number;
  /** It has more than {@link CHILDREN_COUNTED} children. */
  moreChildren: boolean;
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

/** Children of a run linked from its page; the rest are found by the search `parent:<id>`. */
export const CHILDREN_SHOWN = 50;

/** A run's page counts its children up to this many ("all 1000+ children"): a refresh never counts a big family. */
export const CHILDREN_COUNTED = 1000;

/** Changed JSON paths shown per re-add; how many more there are is said. */
export const DIFF_CHANGES_SHOWN = 20;

/** Most characters of one side of a changed JSON path. */
const DIFF_CHARS = 1_024;

const pre = (value: unknown, max?: number): SafeHtml => markup`<pre>${json(value, max)}</pre>`;

/** A value of a diff: its JSON (cut short when long), or "absent". */
const shown = (v: unknown): string => (v === undefined ? '(absent)' : clip(JSON.stringify(v), DIFF_CHARS));

/** The dropped input of a re-add against the run's input, per changed JSON path: the holder's in `<del>`, the dropped one in `<ins>`. */
export function inputDiff(holderInput: unknown, dropped: unknown): SafeHtml {
  const changes = jsonDiff(holderInput, dropped);
  if (!changes.length) return markup`<p class="same">same input</p>`;
  const more = changes.length - DIFF_CHANGES_SHOWN;
  return markup`<ul class="diff">
    ${changes.slice(0, DIFF_CHANGES_SHOWN).map((c) => markup`<li><code>${c.path}</code> <del>${shown(c.before)}</del> <ins>${shown(c.after)}</ins></li>`)}
    ${more > 0 ? markup`<li class="more">and ${more} more changed paths</li>` : ''}
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
        markup`<label>Event <input name="name" required /></label><label>Payload (JSON) <textarea name="payload" rows="2">null</textarea></label><label
            class="check"><input type="checkbox" name="buffer" value="true" /> keep it until the run waits for it</label>`,
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
        <td><pre>${json(e.details, CELL_CHARS)}</pre></td>
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
    <p class="readds">added again <strong>${run.readds}</strong> ${run.readds === 1 ? 'time' : 'times'}</p>
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

/**
 * The run's first children as links, and a link to the search of all `count` of them when there are
 * more (`count+` when it has more than the count).
 */
function children(ctx: PageContext, run: RunInfo, count: number, more: boolean, link: (id: string) => SafeHtml | string): SafeHtml | string {
  if (!run.children.length) return '—';
  const first = run.children.slice(0, CHILDREN_SHOWN).map((c) => markup`${link(c)} `);
  if (count <= CHILDREN_SHOWN) return markup`${first}`;
  return markup`${first}… <a href="${ctx.base}/runs${query({ q: `parent:${run.id}` })}">all ${count}${more ? '+' : ''} children →</a>`;
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
        <td>${h.error ? pre(h.error, CELL_CHARS) : ''}</td>
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
          <dd>${run.progress === null ? '—' : markup`<code class="progress">${clip(JSON.stringify(run.progress), CELL_CHARS)}</code>`}</dd>
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
          <dd>${children(ctx, run, d.childCount, d.moreChildren, link)}</dd>
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
