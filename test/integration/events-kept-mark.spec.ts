/**
 * An event kept for a run while its step runs (its inbox marked) and read by its wait without the
 * run suspending leaves the mark until the step hands over to the next (or the run's next claim).
 * The mark only turns a suspension on the same name into a re-run, and no wait of that name
 * suspends again (it gets the event received): the steps after it run no extra time.
 */
import { RunContext, Step, Workflow } from '../../src';
import { createApp, freshSchema, ident, sql, waitFor } from '../support';

const bodies: Record<string, number> = {};
const ran = (step: string) => (bodies[step] = (bodies[step] ?? 0) + 1);
let sent!: () => void;
const eventSent = new Promise<void>((resolve) => (sent = resolve));

@Workflow('events_kept_mark')
class KeptMark {
  @Step()
  async first(ctx: RunContext) {
    ran('first');
    await eventSent;
    return ctx.waitForEvent('a');
  }

  @Step()
  async again(ctx: RunContext) {
    ran('again');
    return ctx.waitForEvent('a', { timeout: '1h' });
  }

  @Step()
  async other(ctx: RunContext) {
    ran('other');
    return ctx.waitForEvent('b');
  }
}

it('an event kept while the step runs and read without suspending: its mark goes with the step, and no step runs an extra time for it', async () => {
  const schema = freshSchema();
  const S = ident(schema);
  const sender = await createApp({ schema, workflows: [KeptMark] });
  const { runId } = await sender.durable.start(KeptMark);
  // sent while the first step runs, before it reaches its wait
  await waitFor(() => bodies.first === 1, { message: 'the first step runs' });
  expect(await sender.durable.sendEvent(runId, 'a', 1, { buffer: true })).toBe('kept');
  sent();
  await waitFor(async () => (await sender.durable.getRun(runId))?.status === 'waiting', { message: 'the run waits for b' });
  // the steps that read a did so without suspending: a's mark went as the first step ended, b's wait suspended once
  const [row] = await sql(`SELECT inbox, wait_name FROM ${S}.runs WHERE id = $1`, [runId]);
  expect(row).toEqual({ inbox: [], wait_name: 'b' });
  expect(await sender.durable.sendEvent(runId, 'b', 2)).toBe('delivered');
  expect(await sender.durable.waitForRun(runId, { timeout: 30_000 })).toMatchObject({ status: 'completed', result: 2 });
  expect(bodies).toEqual({ first: 1, again: 1, other: 2 });
  // one event received for each name: both waits of a got the one kept
  expect(await sql(`SELECT payload FROM ${S}.events WHERE run_id = $1 AND received_at IS NOT NULL ORDER BY name`, [runId])).toEqual([
    { payload: 1 },
    { payload: 2 },
  ]);
});
