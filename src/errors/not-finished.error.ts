import { DurableError } from './durable.error';

/** The run is still going; the operation needs a finished run (cancel it first). */
export class NotFinishedError extends DurableError {
  readonly code = 'not_finished' as const;

  constructor(readonly runId: string) {
    super(`run ${runId} has not finished`);
  }
}
