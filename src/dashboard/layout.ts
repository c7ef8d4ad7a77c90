import { markup, raw, type SafeHtml } from './html';

/** What every page is rendered with: where the dashboard is mounted and what it may show. */
export interface PageContext {
  /** The dashboard's path from the site root, without a trailing slash (`/api/durable`). */
  base: string;
  /** Actions are shown (not read-only). */
  actions: boolean;
  /** How often live parts refresh, in ms (0: never). */
  refreshMs: number;
}

/**
 * The overview's URL: the dashboard's path itself, without a trailing slash (Fastify's router, unlike
 * Express's, tells `/durable/` from `/durable`), or `/` when the dashboard is the site's root.
 */
export function overviewHref(ctx: PageContext): string {
  return ctx.base || '/';
}

const NAV: [string, string][] = [
  ['', 'Overview'],
  ['/runs', 'Runs'],
  ['/keys', 'Keys'],
  ['/workflows', 'Workflows'],
  ['/schedules', 'Schedules'],
  ['/activity', 'Activity'],
  ['/nodes', 'Nodes'],
];

/** A whole page: the navigation, the title and `body`; the stylesheet and the refresh script are files of the dashboard. */
export function layout(ctx: PageContext, title: string, body: SafeHtml): string {
  const { base } = ctx;
  return markup`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>${title} · durable</title>
        <meta name="durable-refresh" content="${ctx.refreshMs}" />
        <link rel="stylesheet" href="${base}/assets/dashboard.css" />
        <script src="${base}/assets/dashboard.js" defer></script>
      </head>
      <body>
        <header>
          <a class="brand" href="${overviewHref(ctx)}">nestjs-durable</a>
          <nav>${NAV.map(([href, label]) => markup`<a href="${href ? base + href : overviewHref(ctx)}">${label}</a>`)}</nav>
          <form class="search" method="get" action="${base}/runs">
            <input type="search" name="q" placeholder="key:article:42 status:failed" aria-label="search runs" /><button>Search</button>
          </form>
        </header>
        <main>
          <h1>${title}</h1>
          ${body}
        </main>
      </body>
    </html>`.value;
}

/** A table; `rows` already rendered (`<tr>`s), an empty list says so. */
export function table(head: string[], rows: SafeHtml[], empty = 'nothing here'): SafeHtml {
  if (!rows.length) return markup`<p class="empty">${empty}</p>`;
  return markup`<table>
    <thead>
      <tr>
        ${head.map((h) => markup`<th>${h}</th>`)}
      </tr>
    </thead>
    <tbody>
      ${rows}
    </tbody>
  </table>`;
}

/** A status as a badge. */
export function badge(status: string | null | undefined): SafeHtml {
  return status ? markup`<span class="badge status-${status}">${status}</span>` : raw('—');
}

/** A part of a page that refreshes itself while the tab is visible (see assets). */
export function live(id: string, content: SafeHtml): SafeHtml {
  return markup`<section id="${id}" data-live>${content}</section>`;
}

/** Links to the previous and next pages of a list (query strings built by the caller). */
export function pager(prev: string | null, next: string | null): SafeHtml {
  if (!prev && !next) return raw('');
  return markup`<nav class="pager">
    ${prev ? markup`<a rel="prev" href="${prev}">← newer</a>` : ''}${next ? markup`<a rel="next" href="${next}">older →</a>` : ''}
  </nav>`;
}

/**
 * Links of a list paged one way only: back to its first page (`first`, on a page past the first)
 * and on to the next (`next`, labelled `nextLabel`); query strings built by the caller.
 */
export function onwardPager(first: string | null, next: string | null, nextLabel: string): SafeHtml {
  if (!first && !next) return raw('');
  return markup`<nav class="pager">
    ${first ? markup`<a rel="first" href="${first}">← first page</a>` : ''}${next ? markup`<a rel="next" href="${next}">${nextLabel}</a>` : ''}
  </nav>`;
}

/** A query string of the non-empty `params`. */
export function query(params: Record<string, string | undefined | null>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') q.set(k, v);
  const s = q.toString();
  return s ? `?${s}` : '';
}
