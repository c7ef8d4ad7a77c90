import { DurableError } from './durable.error';

/** `ctx.callWorkflow` / `ctx.parallel`: a child run did not complete. */
export class ChildFailedError extends DurableError {
  readonly code = 'child_failed' as const;

  constructor(
    /** The child run's id. */
    readonly childId: string,
    /** The child's final status (`failed`, `cancelled`, `compensated`, `compensation_failed`). */
    readonly childStatus: string,
    /** The child's stored error (`{ name, message, code? }`), or null. */
    readonly childError: unknown,
  ) {
    const msg = (childError as { message?: unknown } | null)?.message;
    super(`child run ${childId} ended ${childStatus}${typeof msg === 'string' ? `: ${msg}` : ''}`);
  }
}
