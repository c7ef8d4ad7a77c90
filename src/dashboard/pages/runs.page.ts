import type { RunInfo } from '../../domain/run-info';
import { markup, when } from '../html';
import { badge, layout, live, pager, query, table, type PageContext } from '../layout';

/** Rows of a list of runs. */
export function runRows(ctx: PageContext, runs: RunInfo[]) {
  return runs.map(
    (r) =>
      markup`<tr>
        <td><a class="mono" href="${ctx.base}/runs/${r.id}">${r.id}</a></td>
        <td>${r.workflow}</td>
        <td class="mono">${r.key ?? '—'}</td>
        <td>${badge(r.status)}</td>
        <td>${r.step ?? '—'}</td>
        <td class="num">${r.attempt}</td>
        <td>${when(r.createdAt)}</td>
      </tr>`,
  );
}

/** The heading of {@link runRows}. */
export const RUN_HEAD = ['run', 'workflow', 'key', 'status', 'step', 'attempt', 'created'];

/** `/runs?q=`: runs newest first, paged both ways, with the search box filled in; `error`: a search refused (400). */
export function runsPage(ctx: PageContext, d: { q: string; runs: RunInfo[]; limit: number; error?: string; hasNewer: boolean }): string {
  const { runs, q, limit } = d;
  const prev = d.hasNewer && runs.length ? `${ctx.base}/runs${query({ q, after: runs[0].id })}` : null;
  const next = runs.length === limit ? `${ctx.base}/runs${query({ q, before: runs[runs.length - 1].id })}` : null;
  const body = markup`<form class="search-big" method="get" action="${ctx.base}/runs">
      <input type="search" name="q" value="${q}" aria-label="search" placeholder="key:article:42 workflow:process_article status:failed" /><button>
        Search
      </button>
    </form>
    <p class="hint">
      Qualifiers: <code>key:</code> <code>workflow:</code> <code>status:</code> <code>id:</code> <code>flow:</code> <code>parent:</code>
      <code>waiting:</code> (event, input, sleep, child, deps); the first colon splits, <code>"…"</code> quotes a value with spaces; a bare run id opens the
      run.
    </p>
    ${d.error ? markup`<p class="error" role="alert">${d.error}</p>` : live('runs-list', markup`${table(RUN_HEAD, runRows(ctx, runs), 'no run matches')}${pager(prev, next)}`)}`;
  return layout(ctx, 'Runs', body);
}
