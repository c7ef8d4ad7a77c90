/** Stable machine-readable codes carried by every {@link DurableError}. */
export type DurableErrorCode =
  | 'key_taken'
  | 'key_contended'
  | 'invalid'
  | 'unknown_workflow'
  | 'run_not_found'
  | 'not_finished'
  | 'no_key'
  | 'not_failed'
  | 'timeout'
  | 'cancelled'
  | 'child_failed'
  | 'not_cancellable'
  | 'serialization_failure'
  | 'schedule_not_found'
  | 'missing_dependency'
  | 'usage'
  | 'not_ready'
  | 'idempotency_key_reused'
  /** {@link ConnectTimeoutError}: Node's code for a connection that timed out. */
  | 'ETIMEDOUT';

/** Base class of every error this package throws on purpose. */
export abstract class DurableError extends Error {
  /** Stable code: branch on it rather than on the message. */
  abstract readonly code: DurableErrorCode;

  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}
