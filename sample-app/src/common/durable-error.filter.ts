import { ArgumentsHost, Catch, ExceptionFilter, HttpStatus } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import {
  DurableError,
  DurableValidationError,
  FlowExistsError,
  KeyContendedError,
  KeyTakenError,
  NoKeyError,
  NotCancellableError,
  NotFailedError,
  NotFinishedError,
  RunNotFoundError,
  ScheduleNotFoundError,
  SerializationError,
  TimeoutError,
  UnknownWorkflowError,
} from 'nestjs-durable';

/** Turns the library's typed errors into HTTP answers carrying the error's `code`. */
@Catch(DurableError)
export class DurableErrorFilter implements ExceptionFilter {
  constructor(private readonly adapterHost: HttpAdapterHost) {}

  catch(error: DurableError, host: ArgumentsHost): void {
    const status = statusOf(error);
    const body: Record<string, unknown> = { statusCode: status, code: error.code, message: error.message };
    if (error instanceof KeyTakenError) body.holderId = error.holderId;
    if (error instanceof DurableValidationError) body.errors = error.errors;
    this.adapterHost.httpAdapter.reply(host.switchToHttp().getResponse(), body, status);
  }
}

function statusOf(error: DurableError): number {
  if (error instanceof RunNotFoundError || error instanceof ScheduleNotFoundError) return HttpStatus.NOT_FOUND;
  // a FlowExistsError is a DurableValidationError, but the request was valid: the id is taken
  if (error instanceof FlowExistsError || error instanceof SerializationError) return HttpStatus.CONFLICT;
  if (error instanceof DurableValidationError || error instanceof UnknownWorkflowError) return HttpStatus.BAD_REQUEST;
  if (
    error instanceof KeyTakenError ||
    error instanceof KeyContendedError ||
    error instanceof NotFinishedError ||
    error instanceof NotFailedError ||
    error instanceof NoKeyError ||
    error instanceof NotCancellableError
  ) {
    return HttpStatus.CONFLICT;
  }
  if (error instanceof TimeoutError) return HttpStatus.GATEWAY_TIMEOUT;
  return HttpStatus.INTERNAL_SERVER_ERROR;
}
