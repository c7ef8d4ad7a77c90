/**
 * Behind a transaction pooler a beat cannot rely on a session setting for its statement timeout:
 * each beat bounds itself on the server in a transaction of its own, so a beat that waits for a
 * lock is cancelled there, not only given up by the client while its backend goes on waiting.
 */
import { Client } from 'pg';
import { createApp, databaseUrl, freshSchema, ident, RecordingLogger, sql, waitFor } from '../support';

it('behind a transaction pooler, a beat stuck behind a lock is cancelled by the server, and no beat is left waiting on it', async () => {
  const schema = freshSchema();
  const S = ident(schema);
  const logger = new RecordingLogger();
  // nodeTimeout 3 s: a beat is bounded at 1 s on the server, 1.5 s on the client
  await createApp({ schema, logger, options: { transactionPooler: true, nodeId: 'pooled-1', nodeTimeout: '3s', worker: { workflows: [] } } });
  const blocker = new Client({ connectionString: databaseUrl() });
  await blocker.connect();
  const waitingBeats = async () =>
    (
      await sql(`SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND strpos(query, $1) > 0 AND strpos(query, 'heartbeat_at = now()') > 0`, [
        `${S}.nodes`,
      ])
    ).length;
  const failed = () => logger.find('warn', 'heartbeat failed');
  try {
    await blocker.query('BEGIN');
    await blocker.query(`SELECT 1 FROM ${S}.nodes WHERE id = 'pooled-1' FOR UPDATE`);
    // three beats in a row fail while the row is held
    await waitFor(() => failed().length >= 3, { timeout: 15_000, message: 'three beats fail' });
    // each was cancelled by the server: none was only given up on this side
    expect(failed().map((e) => e.message)).toEqual(failed().map(() => 'heartbeat failed: canceling statement due to statement timeout'));
    // the backends of the failed beats wait no more: at most the beat out now does
    expect(await waitingBeats()).toBeLessThanOrEqual(1);
  } finally {
    await blocker.query('ROLLBACK');
    await blocker.end();
  }
  // the row let go, the node beats again
  const before = failed().length;
  await waitFor(async () => (await sql(`SELECT 1 FROM ${S}.nodes WHERE id = 'pooled-1' AND heartbeat_at > now() - interval '1 second'`)).length > 0, {
    timeout: 10_000,
    message: 'the node beats again',
  });
  expect(failed().length).toBeLessThanOrEqual(before + 1);
});
