import { Injectable, NestMiddleware } from '@nestjs/common';

/** The Content-Security-Policy of every dashboard response: its own script and stylesheet only, no inline code, no framing. */
export const DASHBOARD_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/** The security headers of every dashboard response, by name. */
export const DASHBOARD_HEADERS: Readonly<Record<string, string>> = {
  'Content-Security-Policy': DASHBOARD_CSP,
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'DENY',
  'Referrer-Policy': 'same-origin',
  'Cache-Control': 'no-store',
};

/** A response as a middleware sees it (Express's, or the raw Node response under Fastify). */
interface HeaderTarget {
  setHeader(name: string, value: string): unknown;
}

/**
 * Sets the dashboard's security headers on each of its responses. A middleware, so they are set
 * before any guard runs: a refusal (403), a bad request or a server error carries them too.
 */
@Injectable()
export class DashboardHeaders implements NestMiddleware {
  use(_req: unknown, res: HeaderTarget, next: () => void): void {
    for (const [name, value] of Object.entries(DASHBOARD_HEADERS)) res.setHeader(name, value);
    next();
  }
}
