import type { KeyInfo } from '../../runs/key-insights';
import { markup } from '../html';
import { searchValue } from '../search';
import { badge, layout, onwardPager, query, table, type PageContext } from '../layout';

/** Rows of a list of keys. */
export function keyRows(ctx: PageContext, keys: KeyInfo[]) {
  return keys.map(
    (k) =>
      markup`<tr>
        <td>${k.workflow}</td>
        <td class="mono"><a href="${ctx.base}/runs${query({ q: `workflow:${k.workflow} key:${searchValue(k.key)}` })}">${k.key}</a></td>
        <td>${k.holderId ? markup`<a class="mono" href="${ctx.base}/runs/${k.holderId}">${k.holderId}</a>` : '—'}</td>
        <td>${badge(k.holderStatus)}</td>
        <td class="num">${k.runs}</td>
        <td class="num">${k.readdsLastDay}</td>
      </tr>`,
  );
}

/** The heading of {@link keyRows}. */
export const KEY_HEAD = ['workflow', 'key', 'holder', 'holder status', 'runs', 're-adds (24 h)'];

/**
 * The pager of a page of keys read from `cursor` (none: the first page): "older" whenever the read
 * gave a cursor to go on from (`next`: a page across workflows can stop short of the page size, or
 * hold no key, with older keys beyond), and, on a page read from a cursor, a link back to the first
 * page (keys page one way only).
 */
function keysPager(ctx: PageContext, d: { workflow?: string; q?: string; cursor?: string; next: string | null }) {
  const href = (cursor?: string) => `${ctx.base}/keys${query({ workflow: d.workflow, q: d.q, cursor })}`;
  return onwardPager(d.cursor ? href() : null, d.next ? href(d.next) : null, 'older →');
}

/**
 * `/keys?workflow=&q=&cursor=`: keys with their holder; of one workflow by key, else of all newest
 * first; `next` is the cursor the read gave to go on from.
 */
export function keysPage(
  ctx: PageContext,
  d: { workflow?: string; q?: string; cursor?: string; keys: KeyInfo[]; next: string | null; workflows: string[] },
): string {
  const body = markup`<form class="search-big" method="get" action="${ctx.base}/keys">
      <label
        >Workflow
        <select name="workflow">
          <option value="">every workflow</option>
          ${d.workflows.map((w) => markup`<option value="${w}" ${w === d.workflow ? markup` selected` : ''}>${w}</option>`)}
        </select></label
      >
      <label>Key contains <input type="search" name="q" value="${d.q ?? ''}" /></label><button>Filter</button>
    </form>
    ${table(KEY_HEAD, keyRows(ctx, d.keys), 'no key')}${keysPager(ctx, d)}`;
  return layout(ctx, 'Keys', body);
}
