import { DurableError } from './durable.error';

/** `cancel` of a run that is compensating: its compensations must run to the end. */
export class NotCancellableError extends DurableError {
  readonly code = 'not_cancellable' as const;

  constructor(
    readonly runId: string,
    readonly status: string,
  ) {
    super(`run ${runId} is ${status} and cannot be cancelled`);
  }
}
