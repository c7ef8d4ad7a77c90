import type { ValidationError } from 'class-validator';
import { DurableError } from './durable.error';

/** Bad input (options, key, input, names), refused before anything was written. */
export class DurableValidationError extends DurableError {
  readonly code = 'invalid' as const;

  constructor(
    message: string,
    /** The class-validator errors behind the message (may be empty for hand-made checks). */
    readonly errors: ValidationError[] = [],
  ) {
    super(message);
  }
}
