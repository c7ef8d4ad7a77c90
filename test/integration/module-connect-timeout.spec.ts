/**
 * The module's own pool (`url`) against a database that does not answer: a server that accepts the
 * connection and never speaks (a firewall that drops, a hung host). The boot fails within
 * `connectTimeout` with a `ConnectTimeoutError` (`ETIMEDOUT`) naming the option, instead of hanging.
 */
import { NestFactory } from '@nestjs/core';
import { ConnectTimeoutError, DurableModule, DurableService, type DurableModuleOptions } from '../../src';
import { DurableConnection } from '../../src/core/durable.connection';
import { databaseUrl, freshSchema, PgProxy } from '../support';

jest.setTimeout(60_000);

/** A proxy to the test database (the database's host and port). */
function proxyToDatabase(): PgProxy {
  const target = new URL(databaseUrl());
  return new PgProxy(target.hostname, Number(target.port || 5432));
}

let silent: PgProxy;
let url: string;

beforeAll(async () => {
  // accepts and never answers
  silent = proxyToDatabase();
  await silent.up();
  silent.silence();
  url = silent.url(databaseUrl());
});

afterAll(async () => {
  await silent.down();
});

/** What booting an app with the module's `options` fails with, and after how long. */
async function bootFailure(options: DurableModuleOptions): Promise<{ err: unknown; ms: number }> {
  const began = Date.now();
  try {
    const app = await NestFactory.createApplicationContext(DurableModule.forRoot({ schema: freshSchema('connect'), ...options }), {
      logger: false,
      abortOnError: false,
    });
    await app.close();
  } catch (err) {
    return { err, ms: Date.now() - began };
  }
  throw new Error('the app booted against a database that does not answer');
}

describe('connectTimeout: a database that does not answer', () => {
  it('fails the boot after connectTimeout with a ConnectTimeoutError naming the option', async () => {
    const { err, ms } = await bootFailure({ url, connectTimeout: '1s' });
    expect(err).toBeInstanceOf(ConnectTimeoutError);
    expect(err).toMatchObject({ code: 'ETIMEDOUT', timeoutMs: 1000, message: 'no answer from the database within 1000ms (connectTimeout)' });
    expect(ms).toBeGreaterThanOrEqual(900);
    expect(ms).toBeLessThan(10_000);
  });

  it('without it, gives up a second past statementTimeout, and says so', async () => {
    const { err, ms } = await bootFailure({ url, statementTimeout: '1s' });
    expect(err).toBeInstanceOf(ConnectTimeoutError);
    expect(err).toMatchObject({
      code: 'ETIMEDOUT',
      timeoutMs: 2000,
      message: 'no answer from the database within 2000ms (connectTimeout, by default a second past statementTimeout)',
    });
    expect(ms).toBeGreaterThanOrEqual(1900);
    expect(ms).toBeLessThan(10_000);
  });
});

describe('connectTimeout: a database that stops answering after the boot', () => {
  it('fails a call that gets no connection within connectTimeout (a new one not answered, or none of the pool free) with a ConnectTimeoutError', async () => {
    const proxy = proxyToDatabase();
    await proxy.up();
    const app = await NestFactory.createApplicationContext(
      DurableModule.forRoot({ url: proxy.url(databaseUrl()), schema: freshSchema('connect_after'), worker: false, connectTimeout: '500ms' }),
      { logger: false },
    );
    try {
      const durable = app.get(DurableService);
      const unknownRun = '01234567-89ab-7def-8123-456789abcdef';
      expect(await durable.getRun(unknownRun)).toBeNull();
      const { db } = app.get(DurableConnection);
      // every connection of the pool busy (its 10): a call waits connectTimeout for one, then fails alike
      const busy = await Promise.all(Array.from({ length: 10 }, () => db.pool.connect()));
      const waited = await durable.getRun(unknownRun).catch((e: unknown) => e);
      // the network goes: the pool's connections are dropped, a new one is accepted and never answered
      for (const client of busy) client.release(true);
      proxy.silence();
      expect(waited).toBeInstanceOf(ConnectTimeoutError);
      expect(waited).toMatchObject({
        code: 'ETIMEDOUT',
        pool: true,
        message: 'no connection of the pool (every one busy, or the database not answering a new one) within 500ms (connectTimeout)',
      });
      for (const call of [() => durable.getRun(unknownRun), () => db.tx((q) => q.query('SELECT 1'))]) {
        const began = Date.now();
        const err = await call().catch((e: unknown) => e);
        expect(err).toBeInstanceOf(ConnectTimeoutError);
        expect(err).toMatchObject({ code: 'ETIMEDOUT', timeoutMs: 500, pool: false, message: 'no answer from the database within 500ms (connectTimeout)' });
        expect(Date.now() - began).toBeLessThan(10_000);
      }
    } finally {
      proxy.speak();
      await app.close();
      await proxy.down();
    }
  });
});
