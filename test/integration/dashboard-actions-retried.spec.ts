import request from 'supertest';
import { RunContext, Step, Workflow } from '../../src';
import { DurableDashboardModule } from '../../src/dashboard';
import { createApp, sql, TestApp } from '../support';
import { testMeter } from '../support/metrics';

const meter = testMeter();

/** Fails while `failing` is set (one attempt). */
let failing = true;

@Workflow('retried_node')
class Node {
  @Step()
  async only(ctx: RunContext) {
    return ctx.input;
  }
}

@Workflow('retried_fail')
class Fail {
  @Step({ retry: { attempts: 1 } })
  async once() {
    if (failing) throw new Error('boom');
    return 'ok';
  }
}

@Workflow('retried_replace', { onDuplicate: 'cancelExisting' })
class Replace {
  @Step()
  async only(ctx: RunContext) {
    return ctx.input;
  }
}

/**
 * Makes the first row of a statement `op` on runs matching `when` fail with SQLSTATE `state` (and
 * `constraint`), once: a sequence counts the rows (a rollback does not undo it), only the first fails.
 */
async function failOnce(schema: string, op: 'UPDATE' | 'INSERT', when: string, state: string, constraint?: string): Promise<void> {
  const S = `"${schema}"`;
  await sql(`DROP TRIGGER IF EXISTS fail_once ON ${S}.runs`);
  await sql(`DROP SEQUENCE IF EXISTS ${S}.fail_once`);
  await sql(`CREATE SEQUENCE ${S}.fail_once`);
  const using = constraint ? `ERRCODE = '${state}', CONSTRAINT = '${constraint}'` : `ERRCODE = '${state}'`;
  await sql(`CREATE OR REPLACE FUNCTION ${S}.fail_once() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF nextval('${S}.fail_once') = 1 THEN RAISE EXCEPTION 'injected %', '${state}' USING ${using}; END IF;
      RETURN NEW;
    END $$`);
  await sql(`CREATE TRIGGER fail_once BEFORE ${op} ON ${S}.runs FOR EACH ROW WHEN (${when}) EXECUTE FUNCTION ${S}.fail_once()`);
}

/** How many rows the injected failure has seen (the failed one included): 2 or more when its statement was done again. */
async function injectedSeen(schema: string): Promise<number> {
  return (await sql(`SELECT last_value::int AS n FROM "${schema}".fail_once`))[0].n;
}

const poster =
  (t: TestApp) =>
  (path: string, form: object = {}) =>
    request(t.server).post(`/durable${path}`).set('Origin', 'http://127.0.0.1').set('Host', '127.0.0.1').type('form').send(form);

describe("dashboard actions whose statement fails once inside the action's transaction", () => {
  it('do it again from a savepoint (deadlock, key conflict): the action is done, recorded and counted once', async () => {
    const t = await createApp({
      workflows: [Node, Fail, Replace],
      imports: [DurableDashboardModule.forRoot({ readOnly: false })],
      http: () => undefined,
    });
    const { durable, schema } = t;
    const post = poster(t);
    const cancelledOf = (workflow: string) => meter.counter('durable.run.finished', { workflow, status: 'cancelled' });

    // cancel: its statement deadlocks once (as with a child ending at that moment)
    const later = (await durable.start('retried_node', 1, { runAt: new Date(Date.now() + 3_600_000) })).runId;
    const counted = await cancelledOf('retried_node');
    await failOnce(schema, 'UPDATE', `NEW.status = 'cancelled'`, '40P01');
    expect((await post(`/runs/${later}/cancel`)).status).toBe(303);
    expect(await injectedSeen(schema)).toBe(2);
    expect((await durable.getRun(later))?.status).toBe('cancelled');
    expect(await cancelledOf('retried_node')).toBe(counted + 1);

    // retry: taking its key back conflicts once (a start took the free key meanwhile)
    const failed = (await durable.start('retried_fail', null, { key: 'f' })).runId;
    await durable.waitForRun(failed, { timeout: 20_000 });
    await durable.releaseKey(failed);
    failing = false;
    await failOnce(schema, 'UPDATE', 'NEW.holds_key AND NOT OLD.holds_key', '23505', 'runs_key');
    expect((await post(`/runs/${failed}/retry`)).status).toBe(303);
    expect(await injectedSeen(schema)).toBe(2);
    expect((await durable.waitForRun(failed, { timeout: 20_000 })).result).toBe('ok');

    // rerun of a flow: inserting its nodes conflicts once on a key
    const flow = await durable.startFlow(
      durable
        .flow({ name: 'retried' })
        .add('a', 'retried_node', 1, { key: 'fa' })
        .add('b', 'retried_node', 2, { deps: ['a'] }),
    );
    await Promise.all(Object.values(flow.runIds).map((id) => durable.waitForRun(id, { timeout: 20_000 })));
    await failOnce(schema, 'INSERT', 'NEW.flow_id IS NOT NULL', '23505', 'runs_key');
    expect((await post(`/flows/${flow.flowId}/rerun`, { from: 'a' })).status).toBe(303);
    expect(await injectedSeen(schema)).toBeGreaterThanOrEqual(2);
    const graph = await durable.getFlowGraph(flow.flowId);
    expect(graph.nodes.map((n) => n.runId)).not.toContain(flow.runIds.a);
    await Promise.all(graph.nodes.map((n) => durable.waitForRun(n.runId!, { timeout: 20_000 })));

    // trigger of a schedule whose start replaces the key's holder (cancelExisting): that cancel deadlocks once
    const held = (await durable.start('retried_replace', 1, { key: 'r', runAt: new Date(Date.now() + 3_600_000) })).runId;
    await durable.schedule('retried_replace', '0 0 1 1 *', { name: 'retried_yearly', key: 'r', input: 2 });
    const replaced = await cancelledOf('retried_replace');
    await failOnce(schema, 'UPDATE', `NEW.status = 'cancelled'`, '40P01');
    expect((await post('/schedules/retried_yearly/trigger')).status).toBe(303);
    expect(await injectedSeen(schema)).toBe(2);
    expect((await durable.getRun(held))?.status).toBe('cancelled');
    expect(await cancelledOf('retried_replace')).toBe(replaced + 1);
    expect((await durable.listSchedules())[0].fires).toBe(1);

    const recorded = (await durable.listActivity({ kinds: ['dashboard_action'] })).map((a) => String(a.details.action)).sort();
    expect(recorded).toEqual(['cancel', 'rerunFlow', 'retry', 'triggerSchedule']);
  });
});
