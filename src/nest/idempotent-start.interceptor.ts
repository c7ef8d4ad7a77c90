import { Injectable, Optional, type CallHandler, type ExecutionContext, type NestInterceptor } from '@nestjs/common';
import { HttpAdapterHost, Reflector } from '@nestjs/core';
import { isDeepStrictEqual } from 'node:util';
import { from, map, mergeMap, type Observable } from 'rxjs';
import { DurableError, DurableValidationError, IdempotencyKeyReusedError } from '../errors';
import type { RunInfo, StartResult } from '../domain/run-info';
import { keyProblem, problem } from '../domain/validation';
import { RunReader } from '../runs/run-reader';
import { Starter } from '../runs/starter';
import { durableErrorResponse, toHttpException } from './http-errors';
import { IDEMPOTENT_RUN, IDEMPOTENT_START, type IdempotentStartSpec } from './idempotent-start.metadata';

/** A request as both Express and Fastify give it. */
type HttpRequest = { headers: Record<string, string | string[] | undefined> } & Record<symbol, StartResult>;

/**
 * The interceptor behind `@IdempotentStart`: reads the key, starts or finds the run (before the
 * handler), refuses a reused key with another input, and answers `{ runId, outcome }` when the
 * handler returns nothing. A durable error is answered as `DurableExceptionFilter` would, so the
 * route needs no filter.
 */
@Injectable()
export class IdempotentStartInterceptor implements NestInterceptor {
  constructor(
    private readonly reflector: Reflector,
    private readonly starter: Starter,
    private readonly reader: RunReader,
    @Optional() private readonly adapterHost?: HttpAdapterHost,
  ) {}

  /** Starts or finds the run, then calls the handler. */
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const spec = this.reflector.get<IdempotentStartSpec | undefined>(IDEMPOTENT_START, context.getHandler());
    if (!spec) return next.handle();
    const req = context.switchToHttp().getRequest<HttpRequest>();
    return from(this.startOrFind(spec, req).catch((err) => Promise.reject(this.answer(err, context)))).pipe(
      mergeMap((run) => {
        req[IDEMPOTENT_RUN] = run;
        return next.handle().pipe(map((body) => (body === undefined ? run : body)));
      }),
    );
  }

  /** The run this request's key started: the newest run of the workflow with that key, else a new one. */
  private async startOrFind(spec: IdempotentStartSpec, req: HttpRequest): Promise<StartResult> {
    const key = keyOf(req, spec.header);
    const input = await spec.input(req);
    const [existing] = await this.reader.list({ workflow: spec.workflow, key, limit: 1 });
    if (existing) return this.replay(existing, input);
    const started = await this.starter.start(spec.workflow, input, { key, onDuplicate: 'useExisting' });
    if (started.outcome === 'created') return started;
    const holder = await this.reader.get(started.runId);
    return holder ? this.replay(holder, input) : started;
  }

  /** A retry: the same run when the input is the same, else `IdempotencyKeyReusedError`. */
  private replay(run: RunInfo, input: unknown): StartResult {
    if (!isDeepStrictEqual(run.input ?? null, asStored(input))) throw new IdempotencyKeyReusedError(run.id, run.key ?? '', run.workflow);
    return { runId: run.id, outcome: 'useExisting' };
  }

  /** A durable error as its HTTP answer (headers set on the reply); anything else unchanged. */
  private answer(err: unknown, context: ExecutionContext): unknown {
    if (!(err instanceof DurableError)) return err;
    const adapter = this.adapterHost?.httpAdapter;
    const reply = context.switchToHttp().getResponse<unknown>();
    if (adapter) for (const [name, value] of Object.entries(durableErrorResponse(err).headers)) adapter.setHeader(reply, name, value);
    return toHttpException(err);
  }
}

/**
 * The request's key: the header's value when it is a key (1 to 255 bytes of UTF-8), else a
 * `DurableValidationError` naming the header, before anything is read or started. The error does
 * not carry the value (an over-long header is not echoed back to the client).
 */
function keyOf(req: HttpRequest, header: string): string {
  const key = headerOf(req, header);
  if (key !== undefined && !keyProblem(key, header)) return key;
  const rule = 'a key of 1 to 255 bytes, the same on every retry of this request';
  const message =
    key === undefined ? `the ${header} header is required: ${rule}` : `the ${header} header must be ${rule} (got ${Buffer.byteLength(key, 'utf8')} bytes)`;
  throw new DurableValidationError(message, [problem(header, undefined, 'isIdempotencyKey', message)]);
}

/** The header's value (the first, when repeated), or undefined when absent or empty. */
function headerOf(req: HttpRequest, name: string): string | undefined {
  const raw = req.headers[name.toLowerCase()];
  const value = Array.isArray(raw) ? raw[0] : raw;
  return value === undefined || value === '' ? undefined : value;
}

/** An input as the run stores it (JSON): what a stored input is compared with. */
function asStored(input: unknown): unknown {
  try {
    return input === undefined ? null : JSON.parse(JSON.stringify(input));
  } catch (err) {
    throw new DurableValidationError(`@IdempotentStart: the input is not JSON-serialisable (${(err as Error).message})`);
  }
}
