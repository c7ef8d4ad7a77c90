import { DurableError } from './durable.error';

/** SQLSTATEs that mean "the transaction lost a race; run it again". */
const RETRYABLE_SQLSTATES = new Set(['40001', '40P01']);

/**
 * Under REPEATABLE READ or SERIALIZABLE, a start inside the caller's transaction lost a race with
 * another transaction on the same key (as any conflicting insert does in Postgres at those levels),
 * or two transactions deadlocked. The caller's transaction is aborted: retry the whole transaction.
 * `cause` is the driver's error.
 */
export class SerializationError extends DurableError {
  readonly code = 'serialization_failure' as const;

  constructor(readonly cause: unknown) {
    super(`the transaction lost a race with a concurrent one (${(cause as Error)?.message}); retry the transaction`);
  }

  /** Wraps a serialization failure or deadlock from Postgres; returns anything else unchanged. */
  static wrap(err: unknown): unknown {
    const code = (err as { code?: unknown })?.code;
    return typeof code === 'string' && RETRYABLE_SQLSTATES.has(code) ? new SerializationError(err) : err;
  }
}
