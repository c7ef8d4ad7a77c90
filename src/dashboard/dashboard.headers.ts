import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import type { Observable } from 'rxjs';

/** The Content-Security-Policy of every dashboard response: its own script and stylesheet only, no inline code, no framing. */
export const DASHBOARD_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

const HEADERS: Record<string, string> = {
  'Content-Security-Policy': DASHBOARD_CSP,
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'DENY',
  'Referrer-Policy': 'same-origin',
  'Cache-Control': 'no-store',
};

/** A response as Express or Fastify has it. */
interface HeaderTarget {
  setHeader?: (name: string, value: string) => void;
  header?: (name: string, value: string) => void;
}

/** Sets the dashboard's security headers on each of its responses. */
@Injectable()
export class DashboardHeaders implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const res = context.switchToHttp().getResponse<HeaderTarget>();
    for (const [name, value] of Object.entries(HEADERS)) {
      if (typeof res.header === 'function') res.header(name, value);
      else res.setHeader?.(name, value);
    }
    return next.handle();
  }
}
