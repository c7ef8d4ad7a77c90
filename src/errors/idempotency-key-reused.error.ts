import { DurableError } from './durable.error';

/**
 * `@IdempotentStart`: the request's idempotency key already started a run of the workflow with
 * another input (HTTP 422). A client reuses a key only to retry the same request.
 */
export class IdempotencyKeyReusedError extends DurableError {
  readonly code = 'idempotency_key_reused' as const;

  constructor(
    /** The run the key started. */
    readonly runId: string,
    /** The idempotency key. */
    readonly key: string,
    /** The workflow's name. */
    readonly workflow: string,
  ) {
    super(`idempotency key ${JSON.stringify(key)} already started run ${runId} of workflow "${workflow}" with another input: use a new key for a new request`);
  }
}
