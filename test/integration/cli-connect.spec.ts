/**
 * The operator CLI against a database that does not answer: a server that accepts the connection
 * and never speaks (a firewall that drops, a hung host). Every command, `migrate` included, gives
 * up after the connect timeout with one line `error ETIMEDOUT: …` and exit 1, instead of hanging.
 */
import { connect, createServer, type Server, type Socket } from 'net';
import { AddressInfo } from 'net';
import { databaseUrl, freshSchema } from '../support';
import { cli, expectError } from '../support/cli';

jest.setTimeout(120_000);

let server: Server;
let url: string;
const sockets = new Set<Socket>();

beforeAll(async () => {
  // accepts and never answers, as a host behind a firewall that drops the packets
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

describe('nestjs-durable against a database that does not answer', () => {
  it('migrate gives up after the default connect timeout (10s) instead of hanging', async () => {
    const began = Date.now();
    const r = await cli(['migrate', '--url', url, '--schema', freshSchema('cli_connect')]);
    expectError(r, 1, 'ETIMEDOUT');
    expect(r.stderr).toContain('10000ms');
    expect(Date.now() - began).toBeLessThan(40_000);
  });

  it('--connect-timeout bounds every command that connects', async () => {
    const schema = freshSchema('cli_connect');
    for (const args of [['runs', 'list'], ['status'], ['migrate', '--print-sql'], ['runs', 'cancel', '0193a4f2-8c1e-7b7d-9d4e-2f6a1c3b5e70']]) {
      const began = Date.now();
      const r = await cli([...args, '--url', url, '--schema', schema, '--connect-timeout', '1s']);
      expectError(r, 1, 'ETIMEDOUT');
      expect(r.stderr).toContain('no answer from the database within 1000ms (--connect-timeout)');
      expect(Date.now() - began).toBeLessThan(30_000);
    }
  });

  it('a bad --connect-timeout is bad usage, before connecting', async () => {
    for (const value of ['soon', '0', '-1s']) {
      const r = await cli(['runs', 'list', '--url', url, '--connect-timeout', value]);
      expectError(r, 2, 'usage');
      expect(r.stderr).toContain('--connect-timeout must be a duration');
    }
  });
});

describe('nestjs-durable against a database that answers', () => {
  let proxy: Server;
  let proxied: string;
  /** Connections the proxy to the test database accepted. */
  let connections = 0;
  /** Connections it forwards: the ones after are accepted and never answered. */
  let answered = Infinity;

  beforeAll(async () => {
    const target = new URL(databaseUrl());
    proxy = createServer((client) => {
      if (++connections > answered) {
        client.on('error', () => undefined).resume(); // read (its end seen), never answered
        return;
      }
      const upstream = connect(Number(target.port || 5432), target.hostname);
      for (const s of [client, upstream]) s.on('error', () => undefined);
      client.pipe(upstream).pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    const via = new URL(databaseUrl());
    via.hostname = '127.0.0.1';
    via.port = String((proxy.address() as AddressInfo).port);
    proxied = via.toString();
  });

  afterAll(async () => {
    await new Promise((resolve) => proxy.close(resolve));
  });

  it('a command of one statement at a time opens one connection, the one it works on (none to try the database first)', async () => {
    const schema = freshSchema('cli_connect');
    for (const args of [['migrate'], ['runs', 'list']]) {
      connections = 0;
      const r = await cli([...args, '--url', proxied, '--schema', schema, '--connect-timeout', '5s']);
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      expect({ args, connections }).toEqual({ args, connections: 1 });
    }
  });

  it('a connection not had after the first (a command reading two things at once) fails as the first would, naming --connect-timeout', async () => {
    const schema = freshSchema('cli_connect');
    expect((await cli(['migrate', '--url', proxied, '--schema', schema])).code).toBe(0);
    connections = 0;
    answered = 1;
    try {
      const r = await cli(['status', '--url', proxied, '--schema', schema, '--connect-timeout', '1s']);
      expect(connections).toBe(2);
      expectError(r, 1, 'ETIMEDOUT');
      expect(r.stderr).toContain('within 1000ms (--connect-timeout)');
    } finally {
      answered = Infinity;
    }
  });
});
