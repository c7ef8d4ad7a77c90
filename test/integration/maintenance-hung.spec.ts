/**
 * A maintenance statement that waits for a lock does not hold maintenance up for as long as the
 * lock is held: without a `statementTimeout`, the pass bounds each statement by `nodeTimeout`, so
 * it fails and is logged, and the pass goes on (the next one begins again): runs are still timed out.
 */
import { Client } from 'pg';
import { RunContext, Step, Workflow } from '../../src';
import { createApp, databaseUrl, freshSchema, ident, RecordingLogger, sql, waitFor } from '../support';

@Workflow('hung_timed', { timeout: '1h' })
class Timed {
  @Step()
  async only(_ctx: RunContext) {
    return 1;
  }
}

@Workflow('hung_node')
class Node {
  @Step()
  async only(_ctx: RunContext) {
    return 1;
  }
}

it.each([
  ['without a statement timeout, a pass stuck behind a lock fails after nodeTimeout', { statementTimeout: false }],
  // no session settings there: the server cancels the statement all the same, not only the client
  ['behind a transaction pooler, a pass stuck behind a lock fails after statementTimeout on the server', { transactionPooler: true, statementTimeout: '1s' }],
] as const)('%s, is logged, and the next pass times runs out', async (_name, bounds) => {
  const schema = freshSchema();
  const S = ident(schema);
  const logger = new RecordingLogger();
  // a worker for no workflow: only the timeout sweep can end the run
  const t = await createApp({ schema, workflows: [Timed], logger, options: { ...bounds, worker: { workflows: [] } } });
  const locker = new Client({ connectionString: databaseUrl() });
  await locker.connect();
  try {
    // the flows' repair, in every pass, waits for this lock
    await locker.query(`BEGIN; LOCK TABLE ${S}.flow_deps IN ACCESS EXCLUSIVE MODE`);
    await waitFor(
      async () => (await sql(`SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND strpos(query, $1) > 0`, [`${S}.flow_deps`])).length > 0,
      {
        message: 'a pass waits for the lock',
      },
    );
    const { runId } = await t.durable.start(Timed, {});
    await sql(`UPDATE ${S}.runs SET run_at = now() - interval '2 hours' WHERE id = $1`, [runId]);
    // the lock is still held: a later pass timed the run out
    await waitFor(async () => (await t.durable.getRun(runId))?.status === 'failed', {
      timeout: 15_000,
      message: 'the run is timed out while the lock is held',
    });
    // the flows' repair failed, and said so
    expect(logger.entries.some((e) => e.level === 'warn' && e.message === 'flow maintenance failed: canceling statement due to statement timeout')).toBe(true);
  } finally {
    await locker.query('ROLLBACK').catch(() => undefined);
    await locker.end();
  }
});

it("without a statement timeout, a flow repair's transaction stuck behind a row lock fails after nodeTimeout, and the next pass times runs out", async () => {
  const schema = freshSchema();
  const S = ident(schema);
  const logger = new RecordingLogger();
  // the flow is made by a node that does no maintenance, so that no pass repairs it before the
  // orphan's row is held
  const setup = await createApp({ schema, workflows: [Timed, Node], options: { worker: false } });
  // a quiet flow whose node 'orphan' waits for a dep that never appeared: the repair cancels it, in
  // a transaction holding the flow's row
  const { flowId, runIds } = await setup.durable.startFlow(setup.durable.flow().add('a', Node));
  await sql(`UPDATE ${S}.runs SET status = 'completed', finished_at = now() - interval '1 hour' WHERE id = $1`, [runIds.a]);
  const { runIds: more } = await setup.durable.startFlow(
    (await setup.durable.appendFlow(flowId, { checkDeps: false })).add('orphan', Node, {}, { deps: ['ghost'] }),
  );
  await sql(`UPDATE ${S}.runs SET created_at = now() - interval '1 hour' WHERE flow_id = $1`, [flowId]);
  await sql(`UPDATE ${S}.flows SET updated_at = now() - interval '1 hour' WHERE id = $1`, [flowId]);
  const locker = new Client({ connectionString: databaseUrl() });
  await locker.connect();
  try {
    // another transaction holds the orphan's row: cancelling it waits
    await locker.query(`BEGIN; SELECT 1 FROM ${S}.runs WHERE id = '${more.orphan}' FOR UPDATE`);
    const t = await createApp({ schema, workflows: [Timed, Node], logger, options: { statementTimeout: false, worker: { workflows: [] } } });
    // the repair waits for the row, and fails
    await waitFor(
      () => logger.entries.some((e) => e.level === 'warn' && e.message === 'flow maintenance failed: canceling statement due to statement timeout'),
      {
        timeout: 15_000,
        message: 'the repair fails',
      },
    );
    const { runId } = await t.durable.start(Timed, {});
    await sql(`UPDATE ${S}.runs SET run_at = now() - interval '2 hours' WHERE id = $1`, [runId]);
    // the row is still held: a later pass timed the run out
    await waitFor(async () => (await t.durable.getRun(runId))?.status === 'failed', {
      timeout: 15_000,
      message: 'the run is timed out while the row is held',
    });
    expect((await t.durable.getRun(more.orphan))!.status).toBe('waiting');
  } finally {
    await locker.query('ROLLBACK').catch(() => undefined);
    await locker.end();
  }
  // the lock gone, a later repair cancels the orphan
  await waitFor(async () => (await setup.durable.getRun(more.orphan))?.status === 'cancelled', { timeout: 15_000, message: 'the orphan is cancelled' });
});
