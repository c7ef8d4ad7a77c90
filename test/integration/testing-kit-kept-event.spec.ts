/**
 * The testing kit's skipTime keeps an event kept for a wait on the same side of the wait's end: an
 * event kept an hour before a wait times out is still its answer after time is skipped past the
 * end (a wait takes only events sent before its end).
 */
import { Client } from 'pg';
import { isSuspension, RunContext, Step, Workflow } from '../../src';
import { DurableTestEnv, testDatabaseUrl } from '../../src/testing';
import { Gate, waitFor } from '../support';

let gate = new Gate();

@Workflow('kit_kept')
class Kept {
  @Step()
  async listen(ctx: RunContext) {
    try {
      return await ctx.waitForEvent('go', { timeout: '2h', timeoutValue: 'timed out' });
    } catch (err) {
      // the step holds on at its wait (recorded, the run still running): an event now is kept for it
      if (isSuspension(err)) await gate.wait(ctx.signal);
      throw err;
    }
  }
}

let env: DurableTestEnv;
beforeAll(async () => {
  env = await DurableTestEnv.create({ providers: [Kept] });
});
afterAll(() => env.close());

it('an event kept for a recorded wait stays its answer when time is skipped past the wait’s end', async () => {
  gate = new Gate();
  const { runId } = await env.durable.start(Kept);
  await waitFor(() => gate.arrived === 1, { timeout: 30_000, message: 'the step holds on at its wait' });
  expect(await env.durable.sendEvent(runId, 'go', { n: 1 })).toBe('kept');
  const db = new Client({ connectionString: await testDatabaseUrl() });
  await db.connect();
  try {
    await env.skipTime('3h');
    // the wait's end has passed (by the skipped clock), the event was kept an hour and more before it
    const [row] = (await db.query(`SELECT until <= now() AS due FROM "${env.schema}".waits WHERE run_id = $1`, [runId])).rows;
    expect(row).toEqual({ due: true });
  } finally {
    await db.end();
  }
  gate.open();
  await env.runUntilIdle();
  expect(await env.durable.getRun(runId)).toMatchObject({ status: 'completed', result: { n: 1 } });
});
