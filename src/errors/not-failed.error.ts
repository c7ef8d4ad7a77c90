import { DurableError } from './durable.error';

/** `retry` needs a failed run. */
export class NotFailedError extends DurableError {
  readonly code = 'not_failed' as const;

  constructor(
    readonly runId: string,
    readonly status: string,
  ) {
    super(`run ${runId} is ${status}, not failed`);
  }
}
