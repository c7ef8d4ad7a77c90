import { DurableError } from './durable.error';

/** Thrown by `ctx.heartbeat()` once the run was cancelled (or this node lost it). */
export class CancelledError extends DurableError {
  readonly code = 'cancelled' as const;
}
