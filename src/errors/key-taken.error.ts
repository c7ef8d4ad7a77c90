import { DurableError } from './durable.error';

/** The key is held by another run (`holderId`) and the start, retry or rerun may not take it. */
export class KeyTakenError extends DurableError {
  readonly code = 'key_taken' as const;

  constructor(
    /** The run that holds the key. */
    readonly holderId: string,
    message = `key is taken by run ${holderId}`,
  ) {
    super(message);
  }
}
