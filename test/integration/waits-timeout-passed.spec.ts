import { RunContext, Step, Workflow } from '../../src';
import { createApp, freshSchema, ident, sql, waitFor } from '../support';

/**
 * A wait's timeout is a deadline on the database's clock: an event or input that comes once it has
 * passed is not the wait's answer, however late a worker gets to the run (a paused workflow, every
 * node down or busy). The wait returns its timeoutValue; the send says so ('dropped', or 'kept' for a
 * later wait with `buffer`).
 */

/**
 * Called by a step before its wait, once: the test pauses the workflow there, so that no worker
 * takes the run again once its wait has timed out, however soon (a 300 ms timeout under load could
 * otherwise pass, and the run complete, before the test saw it waiting).
 */
let beforeWait: (() => Promise<void>) | undefined;
const pauseOnce = async (): Promise<void> => {
  const pause = beforeWait;
  beforeWait = undefined;
  await pause?.();
};

@Workflow('tp_event')
class EventWait {
  @Step()
  async listen(ctx: RunContext) {
    await pauseOnce();
    return ctx.waitForEvent('go', { timeout: 300, timeoutValue: 'timed out' });
  }
}

@Workflow('tp_event_later')
class EventWaitThenAgain {
  @Step()
  async listen(ctx: RunContext) {
    await pauseOnce();
    ctx.put('first', await ctx.waitForEvent('go', { timeout: 300, timeoutValue: 'timed out' }));
  }

  @Step()
  async again(ctx: RunContext) {
    // a new wait for the name: it gets the event kept once the first one had timed out
    return { first: ctx.get('first'), again: await ctx.waitForEvent('go') };
  }
}

@Workflow('tp_input')
class InputWait {
  @Step()
  async listen(ctx: RunContext) {
    await pauseOnce();
    return ctx.waitForInput('ok', { timeout: 300, timeoutValue: 'timed out' });
  }
}

/** Starts `workflow`, whose step pauses it before its wait, waits until its run waits and until the wait's timeout has passed. */
async function pastTimeout(durable: Awaited<ReturnType<typeof createApp>>['durable'], schema: string, workflow: typeof EventWait): Promise<string> {
  beforeWait = () => durable.pause(workflow);
  const { runId } = await durable.start(workflow);
  await waitFor(async () => (await durable.getRun(runId))?.status === 'waiting', { timeout: 30_000, message: 'the run waits' });
  await waitFor(async () => (await sql(`SELECT 1 FROM ${ident(schema)}.waits WHERE run_id = $1 AND until < now()`, [runId])).length === 1, {
    timeout: 30_000,
    message: "the wait's timeout has passed",
  });
  return runId;
}

it('an event sent once the wait timed out (no worker got to the run yet) is not its answer: dropped, and the wait returns its timeoutValue', async () => {
  const { durable, schema } = await createApp({ workflows: [EventWait] });
  const runId = await pastTimeout(durable, schema, EventWait);
  expect(await durable.sendEvent(runId, 'go', { late: true })).toBe('dropped');
  await durable.resume(EventWait);
  expect(await durable.waitForRun(runId, { timeout: 30_000 })).toMatchObject({ status: 'completed', result: 'timed out' });
});

it('a buffered event sent once the wait timed out is kept, not taken by the wait that timed out but by a later wait', async () => {
  const { durable, schema } = await createApp({ workflows: [EventWaitThenAgain] });
  const runId = await pastTimeout(durable, schema, EventWaitThenAgain as never);
  expect(await durable.sendEvent(runId, 'go', { late: true }, { buffer: true })).toBe('kept');
  await durable.resume(EventWaitThenAgain);
  expect(await durable.waitForRun(runId, { timeout: 30_000 })).toMatchObject({
    status: 'completed',
    result: { first: 'timed out', again: { late: true } },
  });
});

it('input provided once the wait timed out is not its answer', async () => {
  const { durable, schema } = await createApp({ workflows: [InputWait] });
  const runId = await pastTimeout(durable, schema, InputWait as never);
  await durable.provideInput(runId, 'ok', { late: true });
  await durable.resume(InputWait);
  expect(await durable.waitForRun(runId, { timeout: 30_000 })).toMatchObject({ status: 'completed', result: 'timed out' });
});

@Workflow('tp_deadline', { timeout: '5s' })
class DeadlineWait {
  @Step()
  async listen(ctx: RunContext) {
    return ctx.waitForEvent('go');
  }
}

it('an event sent to a run waiting past its workflow deadline is dropped (it times out, whatever it gets)', async () => {
  const schema = freshSchema();
  const worker = await createApp({ schema, workflows: [DeadlineWait] });
  const { runId } = await worker.durable.start(DeadlineWait);
  await waitFor(async () => (await worker.durable.getRun(runId))?.status === 'waiting', { timeout: 30_000, message: 'the run waits' });
  await worker.close(); // no worker, no timeout sweep: the run stays waiting past its deadline
  const { durable } = await createApp({ schema, workflows: [DeadlineWait], options: { worker: false } });
  await waitFor(async () => (await sql(`SELECT 1 FROM ${ident(schema)}.runs WHERE id = $1 AND deadline_at < now()`, [runId])).length === 1, {
    timeout: 30_000,
    message: 'the deadline has passed',
  });
  expect(await durable.sendEvent(runId, 'go', { late: true }, { buffer: true })).toBe('dropped');
  expect(await durable.getRun(runId)).toMatchObject({ status: 'waiting' });
  await createApp({ schema, workflows: [DeadlineWait] });
  expect(await durable.waitForRun(runId, { timeout: 30_000 })).toMatchObject({ status: 'failed', error: { name: 'TimeoutError' } });
});
