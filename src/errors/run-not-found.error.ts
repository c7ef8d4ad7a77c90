import { DurableError } from './durable.error';

/** No run (or flow) with that id exists, or (with `why`) only its key tombstone is left of it. */
export class RunNotFoundError extends DurableError {
  readonly code = 'run_not_found' as const;

  constructor(
    readonly runId: string,
    why = 'not found',
  ) {
    super(`run ${runId} ${why}`);
  }
}
