/**
 * The module's own pool (`url`) against a database that does not answer: a server that accepts the
 * connection and never speaks (a firewall that drops, a hung host). The boot fails within
 * `connectTimeout` with a `ConnectTimeoutError` (`ETIMEDOUT`) naming the option, instead of hanging.
 */
import { createServer, type AddressInfo, type Server, type Socket } from 'net';
import { NestFactory } from '@nestjs/core';
import { ConnectTimeoutError, DurableModule, type DurableModuleOptions } from '../../src';
import { freshSchema } from '../support';

jest.setTimeout(60_000);

let server: Server;
let url: string;
const sockets = new Set<Socket>();

beforeAll(async () => {
  // accepts and never answers
  server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `postgres://postgres@127.0.0.1:${(server.address() as AddressInfo).port}/test`;
});

afterAll(async () => {
  for (const s of sockets) s.destroy();
  await new Promise((resolve) => server.close(resolve));
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
