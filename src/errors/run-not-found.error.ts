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

  /** Run `runId` is a key tombstone: what it would need again (its input, its history) was pruned; `then`: what to do instead. */
  static pruned(runId: string, then?: string): RunNotFoundError {
    return new RunNotFoundError(runId, `was pruned: only its key is kept, its input, context and history are gone${then ? `; ${then}` : ''}`);
  }
}
