/**
 * A stalled execution and its replacement read one wait's event at the same moment, each picking
 * another kept event: the one that marks its pick received second finds the other's mark. That is
 * not an error of the step: the event received first is the wait's answer, for both.
 */
import { Client } from 'pg';
import { RunContext, Step, Workflow } from '../../src';
import { createApp, databaseUrl, freshSchema, ident, sql, waitFor } from '../support';

@Workflow('events_receive_race')
class ReceiveRace {
  // two attempts: the stalled node's and its replacement's (an attempt of the replacement that
  // failed would fail the run)
  @Step({ retry: { attempts: 2 } })
  async listen(ctx: RunContext) {
    return ctx.waitForEvent('go', { timeout: '1h' });
  }
}

/** Connections holding row locks (released at the end of the test, whatever happened). */
const holders: Client[] = [];

afterEach(async () => {
  await Promise.all(holders.splice(0).map((c) => c.end().catch(() => undefined)));
});

/** A connection holding the row lock of event `id` until `release`. */
async function lockEvent(S: string, id: string): Promise<{ release(): Promise<void> }> {
  const client = new Client({ connectionString: databaseUrl() });
  await client.connect();
  holders.push(client);
  await client.query('BEGIN');
  await client.query(`SELECT 1 FROM ${S}.events WHERE id = $1 FOR UPDATE`, [id]);
  return { release: async () => void (await client.query('COMMIT')) };
}

/** Waits until `n` statements marking an event received are blocked on a lock. */
async function receivesBlocked(n: number, message: string): Promise<void> {
  await waitFor(
    async () =>
      (await sql(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND strpos(query, 'received_at = now()') > 0`))[0].n >= n,
    { message, timeout: 30_000 },
  );
}

it("a stalled execution and its replacement reading one wait's event at once: the first marked received is the answer, no attempt fails", async () => {
  const schema = freshSchema();
  const S = ident(schema);
  const sender = await createApp({ schema, workflows: [ReceiveRace], options: { worker: false } });
  const { runId } = await sender.durable.start(ReceiveRace);
  expect(await sender.durable.sendEvent(runId, 'go', 'x', { buffer: true })).toBe('kept');
  const [x] = await sql<{ id: string }>(`SELECT id FROM ${S}.events WHERE run_id = $1`, [runId]);
  // node a's step reads the wait's event, its mark of x held up (its snapshot taken: y not in it)
  const holdX = await lockEvent(S, x.id);
  // node a beats once at its start, then not for 30 s: it stalls (its runs are taken over, it does not know)
  await createApp({ schema, workflows: [ReceiveRace], options: { nodeId: 'a', heartbeatInterval: '30s', nodeTimeout: '60s' } });
  await receivesBlocked(1, "node a's step reads its event");
  // a is found dead and its run recovered (as maintenance does), and a newer event kept
  await sql(`DELETE FROM ${S}.nodes WHERE id = 'a'`);
  await sql(`UPDATE ${S}.runs SET status = 'pending', node_id = NULL, run_at = now(), epoch = epoch + 1 WHERE id = $1`, [runId]);
  expect(await sender.durable.sendEvent(runId, 'go', 'y', { buffer: true })).toBe('kept');
  const [y] = await sql<{ id: string }>(`SELECT id FROM ${S}.events WHERE run_id = $1 AND payload = '"y"'`, [runId]);
  // node b runs the step again: it picks y, the newest, and its mark is held up too
  const holdY = await lockEvent(S, y.id);
  await createApp({ schema, workflows: [ReceiveRace], options: { nodeId: 'b' } });
  await receivesBlocked(2, "node b's step reads its event");
  // a's mark of x is made first, then b's of y meets it
  await holdX.release();
  await waitFor(async () => (await sql(`SELECT 1 FROM ${S}.events WHERE id = $1 AND received_at IS NOT NULL`, [x.id])).length > 0, {
    message: "node a's mark of x",
  });
  await holdY.release();
  const run = await sender.durable.waitForRun(runId, { timeout: 30_000 });
  expect(run).toMatchObject({ status: 'completed', result: 'x' });
  expect(await sql(`SELECT payload FROM ${S}.events WHERE run_id = $1 AND received_at IS NOT NULL`, [runId])).toEqual([{ payload: 'x' }]);
});
