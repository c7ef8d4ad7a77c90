import type { KeyInfo } from '../../runs/key-insights';
import { markup } from '../html';
import { searchValue } from '../search';
import { badge, layout, pager, query, table, type PageContext } from '../layout';

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

/** `/keys?workflow=&q=`: keys with their holder; of one workflow by key, else of all newest first. */
export function keysPage(ctx: PageContext, d: { workflow?: string; q?: string; keys: KeyInfo[]; limit: number; workflows: string[] }): string {
  const next = d.keys.length === d.limit ? `${ctx.base}/keys${query({ workflow: d.workflow, q: d.q, cursor: d.keys[d.keys.length - 1].cursor })}` : null;
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
    ${table(KEY_HEAD, keyRows(ctx, d.keys), 'no key')}${pager(null, next)}`;
  return layout(ctx, 'Keys', body);
}
