import { DurableError } from './durable.error';

/** No run (or flow) with that id exists. */
export class RunNotFoundError extends DurableError {
  readonly code = 'run_not_found' as const;

  constructor(readonly runId: string) {
    super(`run ${runId} not found`);
  }
}
