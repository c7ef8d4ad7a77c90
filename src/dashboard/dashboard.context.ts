import { HttpStatus, Inject, Injectable } from '@nestjs/common';
import { ApplicationConfig, HttpAdapterHost } from '@nestjs/core';
import { DurableError, DurableValidationError, RunNotFoundError, ScheduleNotFoundError, UnknownWorkflowError } from '../errors';
import { MAX_TIMER_MS, toMs } from '../domain/duration';
import { isUuid } from '../domain/uuid';
import { sqlState } from '../store/db';
import { DASHBOARD_OPTIONS, type DurableDashboardOptions } from './dashboard.options';
import type { PageContext } from './layout';
import { errorPage } from './pages/lists.page';
import { SearchError } from './search';

/** What a dashboard handler answers: a status and a whole HTML page. */
export interface Answer {
  status: number;
  html: string;
}

/** The response the handlers write to (Express or Fastify). */
export interface HtmlResponse {
  status(code: number): unknown;
  /** Express. */
  type?: (t: string) => unknown;
  /** Fastify. */
  header?: (name: string, value: string) => unknown;
  send(body: string): unknown;
}

/**
 * `id` from a URL, when it is a run id (a UUID); else a `DurableValidationError` (400) saying so,
 * with the id quoted as JSON (a NUL or a control character shows as its escape) and cut short.
 */
export function runIdParam(id: string): string {
  if (isUuid(id)) return id;
  const text = String(id);
  throw new DurableValidationError(`${JSON.stringify(text.length > 80 ? `${text.slice(0, 80)}…` : text)} is not a run id (a UUID)`);
}

/** The status of a page for a failure: a bad request, an unknown run, a refused change, a slow database. */
function statusOf(err: unknown): number | undefined {
  if (err instanceof SearchError || err instanceof DurableValidationError) return HttpStatus.BAD_REQUEST;
  if (err instanceof RunNotFoundError || err instanceof ScheduleNotFoundError || err instanceof UnknownWorkflowError) return HttpStatus.NOT_FOUND;
  if (err instanceof DurableError) return HttpStatus.CONFLICT;
  if (sqlState(err) === '57014') return HttpStatus.SERVICE_UNAVAILABLE; // statement timeout
  return undefined;
}

/** Where the dashboard is mounted and what its pages may show, and how failures become pages. */
@Injectable()
export class DashboardContext {
  readonly path: string;
  private readonly refreshMs: number;

  constructor(
    @Inject(DASHBOARD_OPTIONS) readonly options: DurableDashboardOptions & { path: string },
    private readonly app: ApplicationConfig,
    private readonly adapterHost: HttpAdapterHost,
  ) {
    this.path = options.path;
    this.refreshMs = toMs(options.refreshInterval ?? '5s', 'refreshInterval', MAX_TIMER_MS);
  }

  /** Actions are allowed at all (not read-only). */
  get writable(): boolean {
    return this.options.readOnly === false;
  }

  /** The page context: the dashboard's path under the app's global prefix. */
  page(): PageContext {
    const base = `/${[this.app.getGlobalPrefix(), this.path]
      .map((p) => p.replace(/^\/+|\/+$/g, ''))
      .filter(Boolean)
      .join('/')}`;
    return { base: base === '/' ? '' : base, actions: this.writable, refreshMs: this.refreshMs };
  }

  /** Renders `fn`'s page; a known failure becomes an error page with its status, anything else is thrown on. */
  async render(fn: (ctx: PageContext) => Promise<string | Answer>): Promise<Answer> {
    const ctx = this.page();
    try {
      const out = await fn(ctx);
      return typeof out === 'string' ? { status: HttpStatus.OK, html: out } : out;
    } catch (err) {
      const status = statusOf(err);
      if (status === undefined) throw err;
      const message = status === HttpStatus.SERVICE_UNAVAILABLE ? 'the database did not answer in time; try a narrower search' : (err as Error).message;
      return { status, html: errorPage(ctx, status === HttpStatus.BAD_REQUEST ? 'Bad request' : 'Cannot do that', message) };
    }
  }

  /**
   * Sends the browser to `url` with a 303 (See Other), through the app's HTTP adapter: Express's
   * `res.redirect(status, url)` and Fastify's `reply.redirect(url, status)` take their arguments
   * in opposite orders.
   */
  redirect(res: HtmlResponse, url: string): void {
    this.adapterHost.httpAdapter.redirect(res, HttpStatus.SEE_OTHER, url);
  }

  /** Writes an answer as an HTML response. */
  send(res: HtmlResponse, answer: Answer): void {
    res.status(answer.status);
    if (typeof res.type === 'function') res.type('text/html; charset=utf-8');
    else res.header?.('Content-Type', 'text/html; charset=utf-8');
    res.send(answer.html);
  }
}
