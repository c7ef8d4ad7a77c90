import { HttpStatus, Injectable, OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { DashboardContext } from './dashboard.context';
import { DASHBOARD_HEADERS } from './dashboard.headers';

/** The request and reply of a route of the adapter's own, as read here. */
interface RawRequest {
  url: string;
}

/** Fastify's router options that make it take `/durable/` as `/durable` already. */
interface FastifyConfig {
  ignoreTrailingSlash?: boolean;
  routerOptions?: { ignoreTrailingSlash?: boolean };
}

/**
 * `/durable/` (the overview's path with a trailing slash) under Fastify, whose router tells it apart
 * from `/durable` where Express's does not (Nest registers a route without its trailing slash): a
 * route of the adapter's own sends it on to the overview with a 301, the query kept. It shows
 * nothing, so it is not behind the guards: the overview it leads to is. Nothing is added under
 * Express, nor when Fastify is set to ignore trailing slashes.
 */
@Injectable()
export class OverviewSlash implements OnModuleInit {
  constructor(
    private readonly context: DashboardContext,
    private readonly adapterHost: HttpAdapterHost,
  ) {}

  /** Adds the route, once the dashboard's own are registered (and before Fastify is ready). */
  onModuleInit(): void {
    const adapter = this.adapterHost.httpAdapter;
    if (adapter?.getType() !== 'fastify') return;
    const config = (adapter.getInstance() as { initialConfig?: FastifyConfig }).initialConfig ?? {};
    if (config.ignoreTrailingSlash || config.routerOptions?.ignoreTrailingSlash) return;
    const { base } = this.context.page();
    if (!base) return; // mounted at the root: '/' is the overview's own path
    adapter.get(`${base}/`, (req: RawRequest, res: unknown) => {
      for (const [name, value] of Object.entries(DASHBOARD_HEADERS)) adapter.setHeader(res, name, value);
      const search = req.url.indexOf('?');
      adapter.redirect(res, HttpStatus.MOVED_PERMANENTLY, search < 0 ? base : `${base}${req.url.slice(search)}`);
    });
  }
}
