import type { Logger } from '@nestjs/common';
import { Client } from 'pg';
import { clientQueryable, isReadTimeout, type Queryable } from '../store/db';

/** Longest wait between two reconnection attempts. */
const MAX_RECONNECT_DELAY_MS = 10_000;
/** How long a connection's setup (`onConnect`) may wait for an answer when no statement bound is given. */
const SETUP_TIMEOUT_MS = 10_000;
/** How long closing may wait for the server to see the connection end before the socket is dropped. */
const CLOSE_TIMEOUT_MS = 1_000;

/** Drops a connection that did not answer in time (ending it politely would wait for an answer too). */
function destroy(client: Client): void {
  (client as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy();
}

/**
 * Ends a connection politely, or drops it past {@link CLOSE_TIMEOUT_MS}: one whose peer went silent
 * (a network that drops everything, before keep-alive notices) never sees its end acknowledged.
 */
async function endWithin(client: Client): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const dropped = new Promise<void>((resolve) => {
    timer = setTimeout(() => {
      destroy(client);
      resolve();
    }, CLOSE_TIMEOUT_MS);
  });
  await Promise.race([client.end().catch(() => undefined), dropped]);
  clearTimeout(timer);
}

/**
 * A connection of a node's own, outside the pool: the LISTEN connection, and the one heartbeats use
 * so that a saturated pool cannot make a live node look dead. Reconnects with back-off while open;
 * `queryable` is undefined while it is down (callers fall back to the pool).
 */
export class DedicatedConnection {
  /** The connection as a {@link Queryable}, while it is up. */
  queryable?: Queryable;
  private client?: Client;
  private closed = false;
  private reconnectTimer?: NodeJS.Timeout;

  constructor(
    /** What it is for, in logs and `application_name`. */
    private readonly purpose: string,
    private readonly config: () => object,
    private readonly logger: Logger,
    /** Runs on each new connection before it is used (e.g. LISTEN); `reconnected` after a loss. */
    private readonly onConnect: (client: Client, reconnected: boolean) => Promise<void> = async () => undefined,
    /** Client-side bound of each statement (ms): past it the connection is dropped and made again. */
    private readonly timeoutMs?: number,
  ) {}

  /** Connects; on failure logs and keeps trying in the background. Resolves once the first try ended. */
  open(): Promise<void> {
    return this.connect(0);
  }

  /** Closes the connection ({@link endWithin}: a shutdown does not wait on a silent network) and stops reconnecting. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    const client = this.client;
    this.client = undefined;
    this.queryable = undefined;
    if (client) await endWithin(client);
  }

  private async connect(attempt: number): Promise<void> {
    if (this.closed) return;
    // every statement of the setup has a bound too: a connection gone silent after connecting fails
    // it and is made again, rather than holding the node's boot or reconnection for good
    const query_timeout = this.timeoutMs ?? SETUP_TIMEOUT_MS;
    const client = new Client({ ...this.config(), application_name: `durable-${this.purpose}`, query_timeout });
    client.on('error', () => undefined);
    try {
      await client.connect();
      await this.onConnect(client, attempt > 0);
    } catch (err) {
      if (isReadTimeout(err)) destroy(client);
      else await client.end().catch(() => undefined);
      this.logger.warn(`${this.purpose} connection failed (${(err as Error).message}); retrying`);
      this.retry(attempt);
      return;
    }
    if (this.closed) {
      await endWithin(client);
      return;
    }
    client.once('end', () => {
      if (this.client !== client) return;
      this.client = undefined;
      this.queryable = undefined;
      if (!this.closed) {
        this.logger.warn(`${this.purpose} connection lost; reconnecting`);
        this.retry(0);
      }
    });
    this.client = client;
    const q = clientQueryable(client, this.timeoutMs);
    this.queryable = {
      query: async (text, values) => {
        try {
          return await q.query(text, values);
        } catch (err) {
          // no answer in time (a connection that died without a word): drop it, a new one follows
          if (isReadTimeout(err)) destroy(client);
          throw err;
        }
      },
    };
  }

  private retry(attempt: number): void {
    if (this.closed) return;
    const delay = Math.min(MAX_RECONNECT_DELAY_MS, 100 * 2 ** attempt);
    this.reconnectTimer = setTimeout(() => void this.connect(attempt + 1), delay);
  }
}
