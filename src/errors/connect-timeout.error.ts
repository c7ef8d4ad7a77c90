import { DurableError } from './durable.error';

/**
 * The database did not answer a connection within the time allowed (the module's `connectTimeout`,
 * the CLI's `--connect-timeout`).
 * Its code is Node's own for a connection that timed out, as the socket errors of an unreachable
 * host carry it: a caller that branches on `code === 'ETIMEDOUT'` treats it alike.
 */
export class ConnectTimeoutError extends DurableError {
  readonly code = 'ETIMEDOUT' as const;

  /** `setBy`: what set the time allowed (an option name), said after it. */
  constructor(
    readonly timeoutMs: number,
    setBy?: string,
  ) {
    super(`no answer from the database within ${timeoutMs}ms${setBy ? ` (${setBy})` : ''}`);
  }
}
