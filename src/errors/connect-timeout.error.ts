import { DurableError } from './durable.error';

/**
 * The database did not answer a connection within the time allowed (the module's `connectTimeout`,
 * the CLI's `--connect-timeout`); or, `pool` set, no connection of the module's pool came within it
 * (every one busy, or the database not answering a new one).
 * Its code is Node's own for a connection that timed out, as the socket errors of an unreachable
 * host carry it: a caller that branches on `code === 'ETIMEDOUT'` treats it alike.
 */
export class ConnectTimeoutError extends DurableError {
  readonly code = 'ETIMEDOUT' as const;

  /** `setBy`: what set the time allowed (an option name), said after it; `pool`: a wait for a connection of the pool. */
  constructor(
    readonly timeoutMs: number,
    setBy?: string,
    readonly pool = false,
  ) {
    const what = pool ? 'no connection of the pool (every one busy, or the database not answering a new one)' : 'no answer from the database';
    super(`${what} within ${timeoutMs}ms${setBy ? ` (${setBy})` : ''}`);
  }
}
