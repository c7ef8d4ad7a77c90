import { Catch, Optional, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { DurableError } from '../errors';
import { durableErrorResponse } from './http-errors';

/** The part of an Express or Fastify reply the filter uses when no HTTP adapter is injected. */
interface RawReply {
  setHeader?(name: string, value: string): unknown;
  header?(name: string, value: string): unknown;
  status?(code: number): RawReply;
  code?(code: number): RawReply;
  json?(body: unknown): unknown;
  send?(body: unknown): unknown;
}

/**
 * Answers every durable error with its HTTP status (see `httpStatusOf`) and a JSON body
 * `{ statusCode, code, message, …ids }` (`runId`, `holderId`, `key`, `workflow`, `status`,
 * `errors`… when the error has them), with `Retry-After` on `KeyContendedError`. Register it
 * globally (`{ provide: APP_FILTER, useClass: DurableExceptionFilter }` or
 * `app.useGlobalFilters(new DurableExceptionFilter())`) or per controller with `@UseFilters`.
 */
@Catch(DurableError)
export class DurableExceptionFilter implements ExceptionFilter<DurableError> {
  constructor(@Optional() private readonly adapterHost?: HttpAdapterHost) {}

  /** Replies to the HTTP request that raised `error`. */
  catch(error: DurableError, host: ArgumentsHost): void {
    const { status, body, headers } = durableErrorResponse(error);
    const reply = host.switchToHttp().getResponse<RawReply>();
    const adapter = this.adapterHost?.httpAdapter;
    if (adapter) {
      for (const [name, value] of Object.entries(headers)) adapter.setHeader(reply, name, value);
      adapter.reply(reply, body, status);
      return;
    }
    for (const [name, value] of Object.entries(headers)) (reply.setHeader ?? reply.header)?.call(reply, name, value);
    const withStatus = (reply.status ?? reply.code)!.call(reply, status);
    (withStatus.json ?? withStatus.send)!.call(withStatus, body);
  }
}
