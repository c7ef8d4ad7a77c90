/**
 * A node's own connections (the heartbeat's, the LISTEN one): a setup statement that gets no
 * answer is given up after its bound and the connection is made again, so neither the boot nor a
 * reconnection can hang on it; closing a connection whose network went silent does not wait for
 * an answer that never comes (a shutdown after a partition).
 */
import type { Logger } from '@nestjs/common';
import { DedicatedConnection } from '../../src/worker/dedicated-connection';
import { databaseUrl, PgProxy, waitFor } from '../support';

describe('DedicatedConnection', () => {
  it('a setup statement that gets no answer in time is given up, and the connection is made again', async () => {
    const warnings: string[] = [];
    const logger = { warn: (m: string) => warnings.push(m) } as unknown as Logger;
    const setups: boolean[] = [];
    const connection = new DedicatedConnection(
      'test',
      () => ({ connectionString: databaseUrl() }),
      logger,
      async (client, reconnected) => {
        setups.push(reconnected);
        // the first setup hangs (as on a connection gone silent); the next one answers
        if (!reconnected) await client.query('SELECT pg_sleep(5)');
      },
      300,
    );
    try {
      await connection.open();
      await waitFor(async () => connection.queryable !== undefined, { timeout: 4_000, message: 'the connection is made again' });
      expect(await connection.queryable!.query('SELECT 1 AS one')).toEqual([{ one: 1 }]);
      expect(setups).toEqual([false, true]);
      expect(warnings).toEqual([expect.stringMatching(/^test connection failed \(Query read timeout\); retrying$/)]);
    } finally {
      await connection.close();
    }
  });

  it('closing a connection whose network went silent drops it instead of waiting for its end to be acknowledged', async () => {
    const target = new URL(databaseUrl());
    const proxy = new PgProxy(target.hostname, Number(target.port || 5432));
    await proxy.up();
    const logger = { warn: () => undefined } as unknown as Logger;
    const connection = new DedicatedConnection('test', () => ({ connectionString: proxy.url(databaseUrl()) }), logger);
    try {
      await connection.open();
      expect(await connection.queryable!.query('SELECT 1 AS one')).toEqual([{ one: 1 }]);
      proxy.silence();
      const closing = connection.close().then(() => 'closed');
      const outcome = await Promise.race([closing, new Promise((resolve) => setTimeout(resolve, 10_000, 'still closing'))]);
      expect(outcome).toBe('closed');
    } finally {
      await proxy.down();
    }
  });
});
