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

/**
 * The pager of a page of runs read older than `before`, newer than `after` (`before` wins) or from
 * the newest: a link to each side that may hold more. Past the cursor there is always something
 * (the cursor's run, or what was newer or older than it); on the side read, only when the page is
 * full. An empty page read from a cursor links to the first page instead.
 */
function runsPager(ctx: PageContext, d: { q: string; runs: RunInfo[]; limit: number; before?: string; after?: string }) {
  const { runs, q } = d;
  const up = d.before === undefined && d.after !== undefined;
  const href = (cursor: Record<string, string>) => `${ctx.base}/runs${query({ q, ...cursor })}`;
  if (!runs.length) {
    if (d.before === undefined && d.after === undefined) return pager(null, null);
    return up ? pager(null, href({})) : pager(href({}), null);
  }
  const full = runs.length === d.limit;
  const newer = d.before !== undefined || (up && full);
  const older = up || full;
  return pager(newer ? href({ after: runs[0].id }) : null, older ? href({ before: runs[runs.length - 1].id }) : null);
}

/** `/runs?q=`: runs newest first, paged both ways, with the search box filled in; `error`: a search refused (400). */
export function runsPage(ctx: PageContext, d: { q: string; runs: RunInfo[]; limit: number; error?: string; before?: string; after?: string }): string {
  const { runs, q } = d;
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
    ${d.error ? markup`<p class="error" role="alert">${d.error}</p>` : live('runs-list', markup`${table(RUN_HEAD, runRows(ctx, runs), 'no run matches')}${runsPager(ctx, d)}`)}`;
  return layout(ctx, 'Runs', body);
}
