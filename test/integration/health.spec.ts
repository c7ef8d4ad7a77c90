import type { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type * as net from 'net';
import * as path from 'path';
import { Client } from 'pg';
import { AppModule } from '../../sample-app/src/app.module';
import { DurableHealthIndicator, DurableValidationError, Step, Workflow } from '../../src';
import { createApp, databaseUrl, DIST_ENTRY, freshSchema, ident, PgProxy, RecordingLogger, sql, waitFor, waitForLockWait, withClockOff } from '../support';

/** A workflow for the worker to claim (the claim loop claims only for registered workflows). */
@Workflow('health_noop')
class Noop {
  @Step()
  async only() {}
}

/** Runs `fn` while another connection holds `statement` (a lock) in an open transaction. */
async function whileHeld(statement: string, fn: () => Promise<void>): Promise<void> {
  const blocker = new Client({ connectionString: databaseUrl() });
  await blocker.connect();
  try {
    await blocker.query('BEGIN');
    await blocker.query(statement);
    await fn();
  } finally {
    await blocker.query('ROLLBACK');
    await blocker.end();
  }
}

/**
 * The sample app's real `/health` endpoint (terminus + DurableHealthIndicator), up and down. The
 * app reaches Postgres through a TCP proxy the test can cut, to make the database unreachable.
 */

async function get(base: string, route: string) {
  const res = await fetch(`${base}${route}`);
  return { status: res.status, body: (await res.json()) as Record<string, any> }; // eslint-disable-line @typescript-eslint/no-explicit-any -- JSON of any shape
}

/** The health check's database read may take long on a loaded machine: these tests are about the worker's state, not that read. */
const PATIENT = { timeout: '20s' };

describe('GET /health (sample app, DurableHealthIndicator)', () => {
  let app: INestApplication | undefined;
  let proxy: PgProxy;

  afterEach(async () => {
    await app?.close().catch(() => undefined);
    app = undefined;
    await proxy?.down();
  });

  it('is up, then down when a due run waits past maxLag, the database is unreachable, or the worker loop stalls', async () => {
    const target = new URL(databaseUrl());
    proxy = new PgProxy(target.hostname, Number(target.port || 5432));
    await proxy.up();
    const schema = freshSchema();
    app = await NestFactory.create(AppModule.register({ databaseUrl: proxy.url(databaseUrl()), durableSchema: schema }), { logger: false });
    await app.listen(0, '127.0.0.1');
    const base = `http://127.0.0.1:${(app.getHttpServer().address() as net.AddressInfo).port}`;

    // up
    await waitFor(async () => (await get(base, '/health')).status === 200, { message: '/health is 200' });
    const up = await get(base, '/health');
    expect(up.body.status).toBe('ok');
    expect(up.body.info.durable).toMatchObject({ status: 'up', nodeId: expect.any(String), pending: 0, lagMs: 0, running: expect.any(Number) });

    // down: the oldest due pending run has waited longer than maxLag (the sample's is 5 minutes)
    await sql(
      `insert into ${ident(schema)}.runs (id, workflow, status, run_at) values (gen_random_uuid(), 'nobody_runs_this', 'pending', now() - interval '10 minutes')`,
    );
    const lagging = await get(base, '/health');
    expect(lagging.status).toBe(503);
    expect(lagging.body.status).toBe('error');
    expect(lagging.body.error.durable).toMatchObject({ status: 'down', pending: 1, reason: expect.stringMatching(/maxLag/) });
    expect(lagging.body.error.durable.lagMs).toBeGreaterThanOrEqual(600_000);
    await sql(`delete from ${ident(schema)}.runs where workflow = 'nobody_runs_this'`);
    expect((await get(base, '/health')).status).toBe(200);

    // down: the database does not answer
    await proxy.down();
    const noDb = await get(base, '/health');
    expect(noDb.status).toBe(503);
    expect(noDb.body.error.durable).toMatchObject({ status: 'down', nodeId: up.body.info.durable.nodeId, reason: expect.stringMatching(/^database/) });
    // and up again once it is back
    await proxy.up();
    await waitFor(async () => (await get(base, '/health')).status === 200, { timeout: 15_000, message: '/health is 200 again' });

    // down: this node's worker loop stopped ticking (3 poll intervals without a tick)
    // the sample app runs on the compiled library: its Worker class, not the one of src/
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { Worker } = require(path.join(path.dirname(DIST_ENTRY), 'worker', 'worker'));
    await app.get(Worker).beforeApplicationShutdown();
    await waitFor(async () => (await get(base, '/health')).status === 503, { timeout: 15_000, message: '/health is 503 after the loop stopped' });
    const stalled = await get(base, '/health');
    expect(stalled.body.error.durable).toMatchObject({ status: 'down', reason: expect.stringMatching(/worker loop has not ticked/) });
    expect(stalled.body.error.durable.lastTickMsAgo).toBeGreaterThan(3_000);
  });

  it('a start-only node (worker: false) is not checked for a worker loop; maxLag and timeout are options', async () => {
    const t = await createApp({ options: { worker: false, nodeId: 'api-only' } });
    const indicator = t.get(DurableHealthIndicator);
    const up = await indicator.isHealthy('db');
    expect(up).toEqual({ db: { status: 'up', nodeId: 'api-only', pending: 0, lagMs: 0 } });
    await sql(`insert into ${ident(t.schema)}.runs (id, workflow, status, run_at) values (gen_random_uuid(), 'x', 'pending', now() - interval '2 seconds')`);
    expect((await indicator.isHealthy('db', { maxLag: '1m', timeout: '5s' })).db.status).toBe('up');
    const late = await indicator.isHealthy('db', { maxLag: 500 });
    expect(late.db).toMatchObject({ status: 'down', pending: 1, reason: expect.stringMatching(/maxLag 500ms/) });
    expect(late.db.lagMs).toBeGreaterThanOrEqual(2000);
    // a timeout no timer can wait (it would fire at once and report the database down) is refused
    await expect(indicator.isHealthy('db', { timeout: '30d' })).rejects.toThrow(DurableValidationError);
    await expect(indicator.isHealthy('db', { timeout: '30d' })).rejects.toThrow(/timeout must be at most 2147483647ms/);
  });

  it('is down while the claim loop hangs on a claim that does not come back, and up again once it does', async () => {
    const schema = freshSchema();
    // a claim waits on the lock below, bounded by no statement timeout; nodeTimeout is long enough that the node does not fence itself meanwhile
    const options = { nodeTimeout: '60s', statementTimeout: false as const, worker: { pollInterval: '100ms' } };
    const t = await createApp({ schema, workflows: [Noop], options });
    const indicator = t.get(DurableHealthIndicator);
    await waitFor(async () => (await indicator.isHealthy('durable', PATIENT)).durable.status === 'up', { message: 'up' });
    // plain reads go on (the health query's), every claim waits
    await whileHeld(`LOCK TABLE ${ident(schema)}.runs IN EXCLUSIVE MODE`, async () => {
      await waitForLockWait([`${ident(schema)}.runs`, 'SKIP LOCKED'], 'a claim waits for the lock');
      const down = await waitFor(
        async () => {
          const r = await indicator.isHealthy('durable', PATIENT);
          return r.durable.status === 'down' ? r : undefined;
        },
        { timeout: 30_000, message: 'down while the claim hangs' },
      );
      expect(down.durable).toMatchObject({ status: 'down', reason: expect.stringMatching(/claim/) });
    });
    await waitFor(async () => (await indicator.isHealthy('durable', PATIENT)).durable.status === 'up', {
      timeout: 30_000,
      message: 'up again once the claim came back',
    });
  });

  it('stays up while a claim is slow but within its statement timeout (a busy database), with the default pollInterval', async () => {
    const schema = freshSchema();
    // the default pollInterval (1s; the test apps poll faster): 3 poll intervals are 3 s, less than the claim may take (statementTimeout 20s)
    const t = await createApp({ schema, workflows: [Noop], options: { nodeTimeout: '60s', statementTimeout: '20s', worker: { pollInterval: '1s' } } });
    const indicator = t.get(DurableHealthIndicator);
    await waitFor(async () => (await indicator.isHealthy('durable', PATIENT)).durable.status === 'up', { message: 'up' });
    const seen: { status: string; reason?: unknown; lastTickMsAgo?: unknown }[] = [];
    await whileHeld(`LOCK TABLE ${ident(schema)}.runs IN EXCLUSIVE MODE`, async () => {
      await waitForLockWait([`${ident(schema)}.runs`, 'SKIP LOCKED'], 'a claim waits for the lock');
      // sampled until the claim has been out past 3 poll intervals and a half
      await waitFor(
        async () => {
          const r = (await indicator.isHealthy('durable', PATIENT)).durable;
          seen.push({ status: r.status, reason: r.reason, lastTickMsAgo: r.lastTickMsAgo });
          return (r.lastTickMsAgo as number) > 3_500;
        },
        { timeout: 30_000, message: 'the claim out for 3.5 s' },
      );
    });
    expect(seen.filter((r) => r.status !== 'up')).toEqual([]);
  });

  it("stays up when the node's wall clock is set forward (the loop's silence is timed on a clock that never steps)", async () => {
    const t = await createApp({ workflows: [Noop], options: { nodeTimeout: '60s' } });
    const indicator = t.get(DurableHealthIndicator);
    await waitFor(async () => (await indicator.isHealthy('durable', PATIENT)).durable.status === 'up', { message: 'up' });
    const ahead = await withClockOff(3_600_000, () => indicator.isHealthy('durable', PATIENT));
    expect(ahead.durable).toMatchObject({ status: 'up' });
    expect(ahead.durable.lastTickMsAgo).toBeLessThan(60_000);
  });

  it('is down while the node has fenced itself (it cannot heartbeat), and up again once a beat succeeds', async () => {
    const schema = freshSchema();
    const logger = new RecordingLogger();
    // fenced 3 s after its last beat; each beat waits up to its lock timeout for the row held below
    const t = await createApp({ schema, workflows: [Noop], logger, options: { nodeId: 'health-fenced', nodeTimeout: '4s' } });
    const indicator = t.get(DurableHealthIndicator);
    await waitFor(async () => (await indicator.isHealthy('durable', PATIENT)).durable.status === 'up', { message: 'up' });
    await whileHeld(`SELECT 1 FROM ${ident(schema)}.nodes WHERE id = 'health-fenced' FOR UPDATE`, async () => {
      await waitFor(() => logger.find('warn', 'could not heartbeat').length > 0, { timeout: 30_000, message: 'the node fences itself' });
      const fenced = await indicator.isHealthy('durable', PATIENT);
      expect(fenced.durable).toMatchObject({ status: 'down', nodeId: 'health-fenced', reason: expect.stringMatching(/heartbeat/) });
    });
    await waitFor(async () => (await indicator.isHealthy('durable', PATIENT)).durable.status === 'up', { timeout: 30_000, message: 'up again after a beat' });
  });

  it('shows the sample’s keyed cleanup schedule', async () => {
    proxy = new PgProxy('127.0.0.1', 1); // unused
    app = await NestFactory.create(AppModule.register({ databaseUrl: databaseUrl(), durableSchema: freshSchema() }), { logger: false });
    await app.listen(0, '127.0.0.1');
    const base = `http://127.0.0.1:${(app.getHttpServer().address() as net.AddressInfo).port}`;
    const { status, body } = await get(base, '/schedules');
    expect(status).toBe(200);
    expect(body).toEqual([expect.objectContaining({ name: 'cleanup', workflow: 'cleanup', cron: '*/5 * * * *', key: 'cleanup', source: 'decorator' })]);
    const fired = await fetch(`${base}/schedules/cleanup/trigger`, { method: 'POST' });
    expect(fired.status).toBe(202);
    expect(((await fired.json()) as { outcome: string }).outcome).toMatch(/created|useExisting/);
  });
});
