import { HttpException, HttpStatus } from '@nestjs/common';
import type { ValidationError } from 'class-validator';
import { DurableError, FlowExistsError, type DurableErrorCode } from '../errors';

/**
 * The HTTP status of each durable error, by code. Typed by every code: a new error cannot be
 * added without choosing its status.
 */
const STATUS_OF_CODE: Record<DurableErrorCode, number> = {
  key_taken: HttpStatus.CONFLICT,
  key_contended: HttpStatus.SERVICE_UNAVAILABLE,
  invalid: HttpStatus.BAD_REQUEST,
  unknown_workflow: HttpStatus.BAD_REQUEST,
  run_not_found: HttpStatus.NOT_FOUND,
  schedule_not_found: HttpStatus.NOT_FOUND,
  not_finished: HttpStatus.CONFLICT,
  not_failed: HttpStatus.CONFLICT,
  not_cancellable: HttpStatus.CONFLICT,
  no_key: HttpStatus.CONFLICT,
  serialization_failure: HttpStatus.CONFLICT,
  idempotency_key_reused: HttpStatus.UNPROCESSABLE_ENTITY,
  timeout: HttpStatus.GATEWAY_TIMEOUT,
  not_ready: HttpStatus.SERVICE_UNAVAILABLE,
  ETIMEDOUT: HttpStatus.SERVICE_UNAVAILABLE,
  cancelled: HttpStatus.CONFLICT,
  usage: HttpStatus.BAD_REQUEST,
  child_failed: HttpStatus.INTERNAL_SERVER_ERROR,
  missing_dependency: HttpStatus.INTERNAL_SERVER_ERROR,
};

/** Seconds a client should wait before retrying after a `KeyContendedError` (`Retry-After`). */
export const CONTENDED_RETRY_AFTER_S = 1;

/** The fields of durable errors copied into the HTTP body when an error has them. */
const BODY_FIELDS = ['runId', 'holderId', 'key', 'workflow', 'status', 'flowId', 'scheduleName', 'errors'] as const;

/**
 * The HTTP status of an error: each durable error's (docs/nest.md has the table); a
 * `FlowExistsError` (a validation error of a valid request: the flow id is taken) is 409; any
 * other error 500.
 */
export function httpStatusOf(err: unknown): number {
  if (err instanceof FlowExistsError) return HttpStatus.CONFLICT;
  if (err instanceof DurableError) return STATUS_OF_CODE[err.code] ?? HttpStatus.INTERNAL_SERVER_ERROR;
  return HttpStatus.INTERNAL_SERVER_ERROR;
}

/**
 * A value as a JSON body can carry it: itself when JSON can hold it, a BigInt as its digits, else
 * its type in brackets (a cyclic object, an `EntityManager` passed where it does not belong).
 */
function jsonSafe(value: unknown): unknown {
  if (typeof value === 'bigint') return String(value);
  try {
    JSON.stringify(value);
    return value;
  } catch {
    return `[${(value as object)?.constructor?.name ?? typeof value}]`;
  }
}

/** Validation errors with each bad value made {@link jsonSafe}, nested ones too. */
function jsonSafeErrors(errors: ValidationError[]): ValidationError[] {
  return errors.map((e) => ({ ...e, value: jsonSafe(e.value), children: e.children && jsonSafeErrors(e.children) }));
}

/** The JSON body of a durable error's HTTP answer: `{ statusCode, code, message, …ids }`. */
export interface DurableErrorBody {
  statusCode: number;
  code: DurableErrorCode;
  message: string;
  [field: string]: unknown;
}

/** An error's HTTP answer: status, JSON body (with the ids the error carries) and headers. */
export function durableErrorResponse(err: DurableError): { status: number; body: DurableErrorBody; headers: Record<string, string> } {
  const status = httpStatusOf(err);
  const body: DurableErrorBody = { statusCode: status, code: err.code, message: err.message };
  for (const field of BODY_FIELDS) {
    const value = (err as unknown as Record<string, unknown>)[field];
    if (value !== undefined && value !== null) body[field] = field === 'errors' ? jsonSafeErrors(value as ValidationError[]) : value;
  }
  const headers: Record<string, string> = err.code === 'key_contended' ? { 'Retry-After': String(CONTENDED_RETRY_AFTER_S) } : {};
  return { status, body, headers };
}

/** A durable error as the `HttpException` Nest answers with (same status and body as {@link DurableExceptionFilter}). */
export function toHttpException(err: DurableError): HttpException {
  const { status, body } = durableErrorResponse(err);
  return new HttpException(body, status, { cause: err });
}
