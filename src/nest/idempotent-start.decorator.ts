import { applyDecorators, createParamDecorator, HttpCode, HttpStatus, SetMetadata, UseInterceptors, type ExecutionContext } from '@nestjs/common';
import type { StartResult } from '../domain/run-info';
import type { WorkflowRef } from '../definition/workflow-metadata';
import { IdempotentStartInterceptor } from './idempotent-start.interceptor';
import { assertValid, optionNames, problem, unknownOptionProblems } from '../domain/validation';
import { IDEMPOTENT_RUN, IDEMPOTENT_START, type IdempotentStartOptions, type IdempotentStartSpec } from './idempotent-start.metadata';

/** The option names of `@IdempotentStart` (anything else is refused as misspelt). */
const OPTION_NAMES = optionNames<IdempotentStartOptions>({ input: true, header: true });

/**
 * The IETF Idempotency-Key pattern on a route, built on workflow keys: the request's
 * `Idempotency-Key` header (or `options.header`) becomes the key of a run of `workflow` with the
 * input `options.input(req)`. The first request starts the run; a retry with the same key and the
 * same input is answered with the same run; the same key with another input answers 422
 * (`IdempotencyKeyReusedError`), a request without the header, or with one over 255 bytes, 400
 * (checked before anything is read). An error `options.input` throws is the answer as Nest gives
 * it (an `HttpException` as is, a durable error with its status, anything else 500), and nothing
 * is started: `input` runs before the route's pipes, so it checks the body itself. Every other
 * answer is 200 with the handler's return value, or `{ runId, outcome }` when it returns nothing
 * (`outcome`: `'created'` for the request that started the run, `'useExisting'` for a retry). The
 * start joins the ambient transaction (module option `transactionManager`) when one is open around
 * the route. Bad options throw `DurableValidationError` where the decorator is applied.
 */
export function IdempotentStart<TInput = unknown>(workflow: WorkflowRef, options: IdempotentStartOptions<TInput>): MethodDecorator {
  const header: unknown = options?.header;
  assertValid('@IdempotentStart', [
    ...unknownOptionProblems(options, OPTION_NAMES),
    typeof options?.input === 'function'
      ? undefined
      : problem('input', options?.input, 'isFunction', "input must be a function of the request returning the run's input"),
    header === undefined || (typeof header === 'string' && /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(header))
      ? undefined
      : problem('header', header, 'isHeaderName', 'header must be an HTTP header name (e.g. "Idempotency-Key")'),
  ]);
  const spec: IdempotentStartSpec = { workflow, input: options.input as IdempotentStartSpec['input'], header: options.header ?? 'Idempotency-Key' };
  return applyDecorators(SetMetadata(IDEMPOTENT_START, spec), HttpCode(HttpStatus.OK), UseInterceptors(IdempotentStartInterceptor));
}

/** A route parameter: the run an `@IdempotentStart` route started or found (`{ runId, outcome }`). */
export const IdempotentRun = createParamDecorator(
  (_data: unknown, ctx: ExecutionContext): StartResult | undefined => ctx.switchToHttp().getRequest<Record<symbol, StartResult>>()[IDEMPOTENT_RUN],
);
