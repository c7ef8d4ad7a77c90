import { DurableError } from './durable.error';

/** The run does not hold a key, so there is nothing to release. */
export class NoKeyError extends DurableError {
  readonly code = 'no_key' as const;

  constructor(readonly runId: string) {
    super(`run ${runId} does not hold a key`);
  }
}
