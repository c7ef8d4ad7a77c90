/**
 * What the maintenance pass says of the dead nodes it removes: one that died holding runs is a
 * warning naming the runs recovered; one that held none is only a row removed, logged at log level,
 * never a warning that it "recovered 0 run(s)".
 */
import { RunContext, Step, Workflow } from '../../src';
import { createApp, freshSchema, ident, RecordingLogger, sql, waitFor } from '../support';

@Workflow('dead_nodes_log')
class Held {
  @Step()
  async only(_ctx: RunContext) {
    return 1;
  }
}

it('a dead node that held no run is logged as removed; one that held a run, as a warning that its run was recovered', async () => {
  const schema = freshSchema();
  const S = ident(schema);
  const logger = new RecordingLogger();
  // a worker for no workflow: a recovered run stays pending
  const t = await createApp({ schema, workflows: [Held], logger, options: { worker: { workflows: [] } } });
  const recoveries = () => logger.entries.filter((e) => e.level === 'warn' && e.message.startsWith('recovered '));

  await sql(`INSERT INTO ${S}.nodes (id, heartbeat_at) VALUES ('gone-empty', now() - interval '1 hour')`);
  await waitFor(() => logger.find('log', 'removed 1 dead node(s) holding no run').length === 1, {
    timeout: 15_000,
    message: 'the dead node that held nothing is removed',
  });
  expect(recoveries()).toEqual([]);

  // the dead node and its run in one statement: no pass sees the one without the other
  const { runId } = await t.durable.start(Held, {}, { runAt: new Date(Date.now() + 3_600_000) });
  await sql(
    `WITH n AS (INSERT INTO ${S}.nodes (id, heartbeat_at) VALUES ('gone-busy', now() - interval '1 hour') RETURNING id)
     UPDATE ${S}.runs SET status = 'running', node_id = (SELECT id FROM n) WHERE id = $1`,
    [runId],
  );
  await waitFor(() => recoveries().length === 1, { timeout: 15_000, message: 'the dead node that held a run is recovered' });
  expect(recoveries().map((e) => e.message)).toEqual(['recovered 1 run(s) from 1 dead node(s)']);
  expect((await t.durable.getRun(runId))!).toMatchObject({ status: 'pending', nodeId: null });
  expect(logger.find('log', 'dead node(s) holding no run')).toHaveLength(1);
});
