import { DurableError } from './durable.error';

/** The key changed hands three times while one start ran; trying again is safe. */
export class KeyContendedError extends DurableError {
  readonly code = 'key_contended' as const;

  constructor(message = 'the key changed hands three times during this start; try again') {
    super(message);
  }
}
