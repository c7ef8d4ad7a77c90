import { DurableError } from './durable.error';

/** A wait, a step or a whole run took longer than allowed. */
export class TimeoutError extends DurableError {
  readonly code = 'timeout' as const;
}
