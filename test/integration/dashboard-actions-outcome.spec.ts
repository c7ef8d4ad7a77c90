import request from 'supertest';
import { RunContext, Step, Workflow } from '../../src';
import { DurableDashboardModule } from '../../src/dashboard';
import { createApp, sql, TestApp, waitFor } from '../support';

@Workflow('outcome_waits')
class Waits {
  @Step()
  async approve(ctx: RunContext) {
    return ctx.waitForInput<string>('approval');
  }
}

/** Waits for the input `approval`, then for the event `go`: its result is the event's payload. */
@Workflow('outcome_events')
class Events {
  @Step()
  async approve(ctx: RunContext) {
    return ctx.waitForInput<string>('approval');
  }

  @Step()
  async go(ctx: RunContext) {
    return ctx.waitForEvent<unknown>('go');
  }
}

const BASE = '/durable';

async function dashboardApp(options: Record<string, unknown>): Promise<TestApp> {
  return createApp({
    workflows: [Waits, Events],
    imports: [DurableDashboardModule.forRoot({ readOnly: false, actor: () => 'ops@example.com' })],
    options,
    http: () => undefined,
  });
}

/** Provides `value` as the input `name` of run `runId` through the dashboard, from its own origin. */
const provide = (t: TestApp, runId: string, name: string, value: string) =>
  request(t.server).post(`${BASE}/runs/${runId}/provide-input`).set('Origin', 'http://127.0.0.1').set('Host', '127.0.0.1').type('form').send({ name, value });

/** Sends the event `name` to run `runId` through the dashboard's Send event form (`buffer`: its checkbox's field, `'true'` when ticked). */
const sendEvent = (t: TestApp, runId: string, name: string, payload: string, buffer?: string) =>
  request(t.server)
    .post(`${BASE}/runs/${runId}/send-event`)
    .set('Origin', 'http://127.0.0.1')
    .set('Host', '127.0.0.1')
    .type('form')
    .send({ name, payload, ...(buffer === undefined ? {} : { buffer }) });

/** What a sendEvent of the event `name` to a run of `workflow` by the dashboard's actor records. */
const eventRecord = (outcome: string, name: string, buffer: boolean, workflow = 'outcome_events') => ({
  action: 'sendEvent',
  outcome,
  name,
  buffer,
  actor: 'ops@example.com',
  workflow,
  key: null,
});

/** What a provideInput of the input `name` by the dashboard's actor records (listActivity adds the run's workflow and key). */
const recordOf = (outcome: string, name: string) => ({ action: 'provideInput', outcome, name, actor: 'ops@example.com', workflow: 'outcome_waits', key: null });

/** The details of the dashboard_action records of run `runId`, oldest first. */
async function records(t: TestApp, runId: string): Promise<Record<string, unknown>[]> {
  return (await t.durable.listActivity({ runId, kinds: ['dashboard_action'] })).map((a) => a.details).reverse();
}

/** The inputs and events stored for run `runId`. */
const stored = (t: TestApp, runId: string) => sql(`SELECT name FROM "${t.schema}".events WHERE run_id = $1`, [runId]);

describe('the dashboard tells what the engine did with a provided input', () => {
  it('delivered and kept: the browser goes back to the run, and the record says which', async () => {
    const t = await dashboardApp({ worker: { concurrency: 2 } });
    const { durable } = t;
    const waiting = (await durable.start('outcome_waits', null)).runId;
    await waitFor(async () => (await durable.getRun(waiting))?.waitingFor?.kind === 'input', { timeout: 20_000 });

    // another name than the one it waits for: kept for a later waitForInput of that name
    const kept = await provide(t, waiting, 'later', '1').expect(303);
    expect(kept.headers.location).toBe(`${BASE}/runs/${waiting}`);
    const delivered = await provide(t, waiting, 'approval', '"yes"').expect(303);
    expect(delivered.headers.location).toBe(`${BASE}/runs/${waiting}`);
    expect((await durable.waitForRun(waiting, { timeout: 20_000 })).result).toBe('yes');
    expect(await records(t, waiting)).toEqual([recordOf('kept', 'later'), recordOf('delivered', 'approval')]);
  });

  it('dropped by a run that had finished: 409 saying so, nothing stored, the attempt recorded as dropped', async () => {
    const t = await dashboardApp({ worker: false });
    const { durable } = t;
    // its page offered the form; the run was cancelled before the form was posted
    const run = (await durable.start('outcome_waits', null, { runAt: new Date(Date.now() + 3_600_000) })).runId;
    await durable.cancel(run);

    const res = await provide(t, run, 'approval', '"yes"');
    expect(res.status).toBe(409);
    expect(res.headers.location).toBeUndefined();
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.text).toContain(`<p class="error" role="alert">input &quot;approval&quot; dropped: run ${run} had already finished (cancelled)</p>`);
    expect(await stored(t, run)).toEqual([]);
    expect((await durable.getRun(run))?.status).toBe('cancelled');
    expect(await records(t, run)).toEqual([recordOf('dropped', 'approval')]);
  });

  it('dropped by a run past its workflow deadline, not finished yet: 409 saying so, the attempt recorded as dropped', async () => {
    // no worker: nothing times the run out before the input is posted
    const t = await dashboardApp({ worker: false });
    const [{ id }] = await sql<{ id: string }>(
      `INSERT INTO "${t.schema}".runs (id, workflow, status, wait_kind, wait_name, deadline_at)
       VALUES (gen_random_uuid(), 'outcome_waits', 'waiting', 'input', 'approval', now() - interval '1 minute') RETURNING id::text`,
    );

    const res = await provide(t, id, 'approval', '"yes"');
    expect(res.status).toBe(409);
    expect(res.text).toContain(`input &quot;approval&quot; dropped: run ${id} is past its workflow deadline (waiting)`);
    expect(await stored(t, id)).toEqual([]);
    expect((await t.durable.getRun(id))?.status).toBe('waiting');
    expect(await records(t, id)).toEqual([recordOf('dropped', 'approval')]);
  });
});

describe('the dashboard tells what the engine did with a sent event', () => {
  /** The 409 page's message, as the page escapes it. */
  const droppedMessage = (runId: string, why: string) => `<p class="error" role="alert">event &quot;go&quot; dropped: run ${runId} ${why}</p>`;

  it('dropped by a run that had finished: 409 saying so, with the checkbox or without, nothing stored, each attempt recorded as dropped', async () => {
    const t = await dashboardApp({ worker: false });
    const run = (await t.durable.start('outcome_events', null, { runAt: new Date(Date.now() + 3_600_000) })).runId;
    await t.durable.cancel(run);

    for (const buffer of [undefined, 'true']) {
      const res = await sendEvent(t, run, 'go', '1', buffer);
      expect([buffer, res.status, res.headers.location]).toEqual([buffer, 409, undefined]);
      expect(res.headers['content-type']).toMatch(/^text\/html/);
      expect(res.text).toContain(droppedMessage(run, 'had already finished (cancelled)'));
    }
    expect(await stored(t, run)).toEqual([]);
    expect(await records(t, run)).toEqual([eventRecord('dropped', 'go', false), eventRecord('dropped', 'go', true)]);
  });

  it('dropped by a run going on that does not wait for it: 409 with the hint to keep it, the attempt recorded as dropped', async () => {
    const t = await dashboardApp({ worker: false });
    const run = (await t.durable.start('outcome_events', null, { runAt: new Date(Date.now() + 3_600_000) })).runId;

    const res = await sendEvent(t, run, 'go', '1');
    expect(res.status).toBe(409);
    expect(res.text).toContain(
      droppedMessage(run, 'is pending and not waiting for event &quot;go&quot;; send it with buffer to keep it until the run waits for it'),
    );
    expect(await stored(t, run)).toEqual([]);
    expect((await t.durable.getRun(run))?.status).toBe('pending');
    expect(await records(t, run)).toEqual([eventRecord('dropped', 'go', false)]);
  });

  it('dropped by a run waiting for it past its workflow deadline: 409 saying so', async () => {
    const t = await dashboardApp({ worker: false });
    const [{ id }] = await sql<{ id: string }>(
      `INSERT INTO "${t.schema}".runs (id, workflow, status, wait_kind, wait_name, deadline_at)
       VALUES (gen_random_uuid(), 'outcome_events', 'waiting', 'event', 'go', now() - interval '1 minute') RETURNING id::text`,
    );

    const res = await sendEvent(t, id, 'go', '1');
    expect(res.status).toBe(409);
    expect(res.text).toContain(droppedMessage(id, 'is past its workflow deadline (waiting)'));
    expect(await stored(t, id)).toEqual([]);
    expect(await records(t, id)).toEqual([eventRecord('dropped', 'go', false)]);
  });

  it('kept with the checkbox: 303 back to the run, and the run gets it when it waits for it', async () => {
    const t = await dashboardApp({ worker: { concurrency: 2 } });
    const { durable } = t;
    const run = (await durable.start('outcome_events', null)).runId;
    await waitFor(async () => (await durable.getRun(run))?.waitingFor?.kind === 'input', { timeout: 20_000 });
    const page = (await request(t.server).get(`${BASE}/runs/${run}`).expect(200)).text;
    expect(page).toContain('<input type="checkbox" name="buffer" value="true" /> keep it until the run waits for it</label>');

    // waiting for its input, not for the event: dropped without the checkbox, kept with it
    const dropped = await sendEvent(t, run, 'go', '"early"');
    expect(dropped.status).toBe(409);
    expect(dropped.text).toContain(
      droppedMessage(run, 'is waiting, but not for event &quot;go&quot;; send it with buffer to keep it until the run waits for it'),
    );
    expect((await sendEvent(t, run, 'go', '1', 'yes')).status).toBe(400); // the checkbox sends "true" or nothing
    const kept = await sendEvent(t, run, 'go', '{"n":1}', 'true').expect(303);
    expect(kept.headers.location).toBe(`${BASE}/runs/${run}`);
    await provide(t, run, 'approval', '"yes"').expect(303);
    expect((await durable.waitForRun(run, { timeout: 20_000 })).result).toEqual({ n: 1 });
    expect(await records(t, run)).toEqual([
      eventRecord('dropped', 'go', false),
      eventRecord('kept', 'go', true),
      { ...recordOf('delivered', 'approval'), workflow: 'outcome_events' },
    ]);
  });
});
