import { Injectable, NestMiddleware } from '@nestjs/common';
import { context, propagation, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';

/** The parts of Express' request and response the middleware uses. */
interface Req {
  method: string;
  originalUrl?: string;
  url: string;
  headers: Record<string, string | string[] | undefined>;
}
interface Res {
  statusCode: number;
  on(event: 'finish', listener: () => void): unknown;
}

/**
 * A server span per request, continuing an incoming W3C `traceparent` header. The runs a request
 * starts store this context, so their `durable.run` / `durable.step` spans join the request's
 * trace, whichever node runs them. (In production use `@opentelemetry/instrumentation-http`.)
 * With no SDK registered this is a no-op.
 */
@Injectable()
export class TraceMiddleware implements NestMiddleware {
  use(req: Req, res: Res, next: () => void): void {
    const parent = propagation.extract(context.active(), req.headers);
    const span = trace.getTracer('sample-app').startSpan(`${req.method} ${(req.originalUrl ?? req.url).split('?')[0]}`, { kind: SpanKind.SERVER }, parent);
    res.on('finish', () => {
      span.setAttribute('http.response.status_code', res.statusCode);
      if (res.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    });
    context.with(trace.setSpan(parent, span), () => next());
  }
}
