/**
 * While a node's heartbeat connection is down, its beats go through the pool, bounded on the
 * server as on its own connection: a beat stuck behind a lock fails there after a third of
 * `nodeTimeout`, not after the pool's statement timeout.
 */
import { Client, Pool } from 'pg';
import { Logger } from '@nestjs/common';
import { Db } from '../../src/store/db';
import { NodesStore } from '../../src/store/nodes.store';
import { CutShortRuns } from '../../src/worker/cut-short';
import { Heartbeat, type HeartbeatHost } from '../../src/worker/heartbeat';
import { createApp, databaseUrl, freshSchema, ident, RecordingLogger } from '../support';

it("a beat through the pool while the heartbeat's own connection is down is cancelled by the server after a third of nodeTimeout", async () => {
  const schema = freshSchema();
  // the schema's tables, and a node row to hold
  await createApp({ schema, options: { worker: false } });
  const pool = new Pool({ connectionString: databaseUrl(), options: '-c statement_timeout=30000' });
  const logger = new RecordingLogger();
  const host: HeartbeatHost = {
    owned: () => [],
    progress: () => [],
    answeredBelow: () => 0,
    firstClaim: () => 0,
    numberAbove: () => undefined,
    cutShort: new CutShortRuns(),
    lost: () => undefined,
    fenced: () => undefined,
    beaten: () => undefined,
    lead: () => undefined,
    info: () => ({}),
  };
  const heartbeat = new Heartbeat(
    new NodesStore(schema),
    host,
    {
      nodeId: 'fallback-1',
      heartbeatMs: 60_000,
      nodeTimeoutMs: 1_500,
      // its own connection never comes up: nothing listens there
      connectionConfig: () => ({ host: '127.0.0.1', port: 1, connectionTimeoutMillis: 200 }),
      fallback: new Db(pool),
      transactionPooler: false,
    },
    logger as unknown as Logger,
  );
  const blocker = new Client({ connectionString: databaseUrl() });
  await blocker.connect();
  try {
    await heartbeat.start(); // its first beat, through the pool, makes the row
    await blocker.query('BEGIN');
    await blocker.query(`SELECT 1 FROM ${ident(schema)}.nodes WHERE id = 'fallback-1' FOR UPDATE`);
    const sent = Date.now();
    await heartbeat.beat();
    const tookMs = Date.now() - sent;
    expect(logger.find('warn', 'heartbeat failed').map((e) => e.message)).toEqual(['heartbeat failed: canceling statement due to statement timeout']);
    // a third of nodeTimeout on the server (500 ms), far from the pool's 30 s
    expect(tookMs).toBeLessThan(10_000);
  } finally {
    await blocker.query('ROLLBACK').catch(() => undefined);
    await blocker.end();
    await heartbeat.stop();
    await pool.end();
  }
});
