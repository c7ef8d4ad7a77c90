import { isDeepStrictEqual } from 'node:util';
import request from 'supertest';
import { RunContext, Step, Workflow } from '../../src';
import { DurableDashboardModule } from '../../src/dashboard';
import { countRuns, createApp, sql, TestApp, waitFor } from '../support';
import { testMeter } from '../support/metrics';

const meter = testMeter();

/** Fails while `failing` is set (one attempt). */
let failing = true;

@Workflow('atomic_node')
class Node {
  @Step()
  async only(ctx: RunContext) {
    return ctx.input;
  }
}

@Workflow('atomic_waits')
class Waits {
  @Step()
  async input(ctx: RunContext) {
    return ctx.waitForInput<string>('approval');
  }

  @Step()
  async event(ctx: RunContext) {
    return ctx.waitForEvent<number>('go');
  }
}

@Workflow('atomic_fail')
class Fail {
  @Step({ retry: { attempts: 1 } })
  async once() {
    if (failing) throw new Error('boom');
    return 'ok';
  }
}

@Workflow('atomic_strict', { onDuplicate: 'error' })
class Strict {
  @Step()
  async only(ctx: RunContext) {
    return ctx.input;
  }
}

const BASE = '/durable';

async function dashboardApp(): Promise<TestApp> {
  return createApp({
    workflows: [Node, Waits, Fail, Strict],
    imports: [DurableDashboardModule.forRoot({ readOnly: false, actor: () => 'ops@example.com' })],
    options: { worker: { concurrency: 3 } },
    http: () => undefined,
  });
}

/** Makes every write of a `dashboard_action` record fail: at once, or (`atCommit`) when its transaction commits. */
async function refuseRecords(schema: string, atCommit = false): Promise<void> {
  const S = `"${schema}"`;
  await sql(`CREATE FUNCTION ${S}.refuse_action() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'activity refused'; END $$`);
  await sql(
    atCommit
      ? `CREATE CONSTRAINT TRIGGER refuse_action AFTER INSERT ON ${S}.activity DEFERRABLE INITIALLY DEFERRED
         FOR EACH ROW WHEN (NEW.kind = 'dashboard_action') EXECUTE FUNCTION ${S}.refuse_action()`
      : `CREATE TRIGGER refuse_action BEFORE INSERT ON ${S}.activity FOR EACH ROW WHEN (NEW.kind = 'dashboard_action') EXECUTE FUNCTION ${S}.refuse_action()`,
  );
}

async function acceptRecords(schema: string): Promise<void> {
  await sql(`DROP TRIGGER refuse_action ON "${schema}".activity`);
  await sql(`DROP FUNCTION "${schema}".refuse_action()`);
}

/** A POST of the dashboard from its own origin. */
const poster =
  (t: TestApp) =>
  (path: string, form: object = {}) =>
    request(t.server).post(`${BASE}${path}`).set('Origin', 'http://127.0.0.1').set('Host', '127.0.0.1').type('form').send(form);

/** The dashboard_action records, by action. */
async function recorded(t: TestApp): Promise<string[]> {
  return (await t.durable.listActivity({ kinds: ['dashboard_action'] })).map((a) => String(a.details.action)).sort();
}

describe('dashboard actions and their activity record commit together', () => {
  it('with the record refused, no action is done and the page answers an error; with it accepted, each is done and recorded', async () => {
    const t = await dashboardApp();
    const { durable } = t;
    const S = `"${t.schema}"`;
    const post = poster(t);

    const later = (await durable.start('atomic_node', 1, { runAt: new Date(Date.now() + 3_600_000) })).runId;
    const waits = (await durable.start('atomic_waits', null, { key: 'w:1' })).runId;
    const events = (await durable.start('atomic_waits', null, { key: 'w:2' })).runId;
    const failed = (await durable.start('atomic_fail')).runId;
    const done = (await durable.start('atomic_node', 2, { key: 'done:1' })).runId;
    const flow = await durable.startFlow(
      durable
        .flow({ name: 'atomic' })
        .add('a', 'atomic_node', 1)
        .add('b', 'atomic_node', 2, { deps: ['a'] }),
    );
    await durable.schedule('atomic_node', '0 0 1 1 *', { name: 'atomic_yearly', input: 7 });
    await durable.waitForRun(failed, { timeout: 20_000 });
    await durable.waitForRun(done, { timeout: 20_000 });
    await Promise.all(Object.values(flow.runIds).map((id) => durable.waitForRun(id, { timeout: 20_000 })));
    await waitFor(async () => (await durable.getRun(waits))?.waitingFor?.kind === 'input', { timeout: 20_000 });
    // the second run waits for its input first: given here, it then waits for the event
    await durable.provideInput(events, 'approval', 'yes');
    await waitFor(async () => (await durable.getRun(events))?.waitingFor?.kind === 'event', { timeout: 20_000 });

    const actions: { path: string; form?: object }[] = [
      { path: `/runs/${later}/cancel` },
      { path: `/runs/${failed}/retry` },
      { path: `/runs/${done}/release-key` },
      { path: `/runs/${done}/rerun` },
      { path: `/runs/${waits}/provide-input`, form: { name: 'approval', value: '"yes"' } },
      { path: `/runs/${events}/send-event`, form: { name: 'go', payload: '5' } },
      { path: '/workflows/atomic_node/pause' },
      { path: '/schedules/atomic_yearly/trigger' },
      { path: `/flows/${flow.flowId}/rerun`, form: { from: 'a' } },
    ];
    const state = async () => ({
      runs: await sql(`select id, status, holds_key, flow_id, attempt from ${S}.runs order by id`),
      events: await sql(`select run_id, name from ${S}.events order by run_id, name`),
      controls: await sql(`select workflow, paused from ${S}.workflow_controls where paused`),
      fires: await sql(`select fires, last_fire_at from ${S}.schedules`),
      activity: await sql(`select kind, run_id from ${S}.activity order by id`),
    });
    const before = await state();
    await refuseRecords(t.schema);
    // each action on its own: its answer, and whether it changed anything
    const outcomes: { path: string; status: number; changed: boolean }[] = [];
    for (const { path, form } of actions) {
      const was = await state();
      const { status } = await post(path, form);
      outcomes.push({ path, status, changed: !isDeepStrictEqual(await state(), was) });
    }
    expect(outcomes).toEqual(actions.map(({ path }) => ({ path, status: 500, changed: false })));
    expect(await state()).toEqual(before);
    expect((await durable.getRunHistory(failed)).length).toBe(1);

    await acceptRecords(t.schema);
    failing = false;
    for (const { path, form } of actions) {
      const res = await post(path, form);
      expect([path, res.status]).toEqual([path, 303]);
    }
    expect((await durable.getRun(later))?.status).toBe('cancelled');
    expect((await durable.getRun(done))?.holdsKey).toBe(false);
    expect((await durable.listWorkflows()).find((w) => w.name === 'atomic_node')?.paused).toBe(true);
    await post('/workflows/atomic_node/resume').expect(303);
    expect((await durable.waitForRun(failed, { timeout: 20_000 })).result).toBe('ok');
    await waitFor(async () => (await durable.getRun(waits))?.waitingFor?.kind === 'event', { timeout: 20_000 });
    expect((await durable.waitForRun(events, { timeout: 20_000 })).result).toBe(5);
    expect(await countRuns(t.schema, `workflow = 'atomic_node' AND key = 'done:1'`)).toBe(2); // the rerun's new run
    expect((await durable.listSchedules())[0].fires).toBe(1);
    const graph = await durable.getFlowGraph(flow.flowId);
    expect(graph.nodes.find((n) => n.name === 'a')?.runId).not.toBe(flow.runIds.a);
    expect(await recorded(t)).toEqual(
      ['cancel', 'pause', 'provideInput', 'releaseKey', 'rerun', 'rerunFlow', 'resume', 'retry', 'sendEvent', 'triggerSchedule'].sort(),
    );
  });

  it('with the record refused when its transaction commits, nothing is done and nothing is counted', async () => {
    const t = await dashboardApp();
    const { durable } = t;
    const post = poster(t);
    const later = (await durable.start('atomic_node', 1, { runAt: new Date(Date.now() + 3_600_000) })).runId;
    const done = (await durable.start('atomic_node', 2, { key: 'done:2' })).runId;
    await durable.waitForRun(done, { timeout: 20_000 });
    const figures = async () => ({
      cancelled: await meter.counter('durable.run.finished', { workflow: 'atomic_node', status: 'cancelled' }),
      released: await meter.counter('durable.key.release', { workflow: 'atomic_node' }),
    });
    const counted = await figures();
    await refuseRecords(t.schema, true);
    expect((await post(`/runs/${later}/cancel`)).status).toBe(500);
    expect((await post(`/runs/${done}/release-key`)).status).toBe(500);
    expect((await durable.getRun(later))?.status).toBe('pending');
    expect((await durable.getRun(done))?.holdsKey).toBe(true);
    expect(await figures()).toEqual(counted);
    expect(await recorded(t)).toEqual([]);

    await acceptRecords(t.schema);
    await post(`/runs/${later}/cancel`).expect(303);
    await post(`/runs/${done}/release-key`).expect(303);
    expect(await figures()).toEqual({ cancelled: counted.cancelled + 1, released: counted.released + 1 });
    expect(await recorded(t)).toEqual(['cancel', 'releaseKey']);
  });

  it('a trigger whose start is refused (its key held, onDuplicate error) answers 409 and writes nothing, its skip included', async () => {
    const t = await dashboardApp();
    const S = `"${t.schema}"`;
    const held = (await t.durable.start('atomic_strict', 1, { key: 'k', runAt: new Date(Date.now() + 3_600_000) })).runId;
    await t.durable.schedule('atomic_strict', '0 0 1 1 *', { name: 'atomic_strict_yearly', key: 'k' });
    const activity = await sql(`select kind, run_id from ${S}.activity order by id`);
    const res = await poster(t)('/schedules/atomic_strict_yearly/trigger');
    expect(res.status).toBe(409);
    expect(res.text).toContain(held);
    expect(await sql(`select fires, failures, last_fire_at from ${S}.schedules`)).toEqual([{ fires: 0, failures: 0, last_fire_at: null }]);
    expect(await sql(`select kind, run_id from ${S}.activity order by id`)).toEqual(activity);
    expect(await countRuns(t.schema, `workflow = 'atomic_strict'`)).toBe(1);
  });
});
