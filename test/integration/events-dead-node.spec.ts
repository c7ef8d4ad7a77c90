import { RunContext, Step, Workflow } from '../../src';
import { createApp, freshSchema, ident, sql } from '../support';

/**
 * An event sent to a run whose node died while the run was mid-step (still `running`, held by a node
 * that no longer heartbeats), before a survivor recovers it: kept when the step had reached its wait
 * (recorded), so the recovered run resumes with it; dropped without `buffer` when it had not.
 */

@Workflow('edn_wait')
class WaitGo {
  @Step()
  async listen(ctx: RunContext) {
    return ctx.waitForEvent('go', { timeout: '1h', timeoutValue: 'timed out' });
  }
}

/** A run left `running` by a node that is gone, its step at its wait (`reached`: the wait recorded) or not. */
async function orphan(reached: boolean) {
  const schema = freshSchema();
  const sender = await createApp({ schema, workflows: [WaitGo], options: { worker: false } });
  const { runId } = await sender.durable.start(WaitGo);
  const S = ident(schema);
  await sql(`UPDATE ${S}.runs SET status = 'running', node_id = 'gone', epoch = epoch + 1, attempt = 1, started_at = now() WHERE id = $1`, [runId]);
  if (reached) await sql(`INSERT INTO ${S}.waits (run_id, step, call, kind, name, until) VALUES ($1, 0, 0, 'event', 'go', now() + interval '1 hour')`, [runId]);
  return { schema, sender, runId };
}

it('the step had reached its wait: the event is kept, and the recovered run resumes with it', async () => {
  const { schema, sender, runId } = await orphan(true);
  expect(await sender.durable.sendEvent(runId, 'go', { n: 1 })).toBe('kept');
  await createApp({ schema, workflows: [WaitGo] }); // a survivor: recovers the run and runs it again
  expect(await sender.durable.waitForRun(runId, { timeout: 30_000 })).toMatchObject({ status: 'completed', result: { n: 1 } });
});

it('the step had not reached its wait: dropped without buffer, kept with it', async () => {
  const { schema, sender, runId } = await orphan(false);
  expect(await sender.durable.sendEvent(runId, 'go', { n: 1 })).toBe('dropped');
  expect(await sender.durable.sendEvent(runId, 'go', { n: 2 }, { buffer: true })).toBe('kept');
  await createApp({ schema, workflows: [WaitGo] });
  expect(await sender.durable.waitForRun(runId, { timeout: 30_000 })).toMatchObject({ status: 'completed', result: { n: 2 } });
});
