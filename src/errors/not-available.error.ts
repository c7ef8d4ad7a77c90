import { DurableError } from './durable.error';

/** The feature asked for does not exist in this version (e.g. pausing a workflow). */
export class NotAvailableError extends DurableError {
  readonly code = 'not_available' as const;
}
