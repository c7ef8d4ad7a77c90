import { DurableError } from './durable.error';

/** The key is held by another run (`holderId`) and the start, retry or rerun may not take it. */
export class KeyTakenError extends DurableError {
  readonly code = 'key_taken' as const;

  constructor(
    /** The run that holds the key. */
    readonly holderId: string,
    /** The key (null when not known). */
    readonly key: string | null = null,
    /** The workflow the key belongs to (null when not known). */
    readonly workflow: string | null = null,
  ) {
    super(`key ${key === null ? '' : `${JSON.stringify(key)} `}${workflow === null ? '' : `of workflow "${workflow}" `}is taken by run ${holderId}`);
  }
}
