import { DurableError } from './durable.error';

/** A command line the operator CLI cannot run: unknown command or option, missing argument, bad value. */
export class UsageError extends DurableError {
  readonly code = 'usage' as const;
}
