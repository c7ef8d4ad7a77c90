import request from 'supertest';
import { RunContext, Step, Workflow } from '../../src';
import { DurableDashboardModule } from '../../src/dashboard';
import { createApp, mostValuesRead, sql } from '../support';

@Workflow('abounds_node')
class Node {
  @Step()
  async only(ctx: RunContext) {
    return ctx.input;
  }
}

describe('dashboard actions: what they read', () => {
  it('a trigger answered by a key holder of 2,000 children does not read every child id', async () => {
    const t = await createApp({
      workflows: [Node],
      imports: [DurableDashboardModule.forRoot({ readOnly: false })],
      options: { worker: false },
      http: () => undefined,
    });
    const holder = (await t.durable.start('abounds_node', 0, { key: 'k', runAt: new Date(Date.now() + 3_600_000) })).runId;
    await sql(
      `insert into "${t.schema}".runs (id, workflow, parent_id, status, run_at)
       select gen_random_uuid(), 'abounds_node', $1, 'pending', now() + interval '1 hour' from generate_series(1, 2000)`,
      [holder],
    );
    await t.durable.schedule('abounds_node', '0 0 1 1 *', { name: 'abounds_yearly', key: 'k' });
    let location = '';
    const most = await mostValuesRead(async () => {
      const res = await request(t.server)
        .post('/durable/schedules/abounds_yearly/trigger')
        .set('Sec-Fetch-Site', 'same-origin')
        .type('form')
        .send({})
        .expect(303);
      location = res.headers.location;
    });
    expect(location).toBe(`/durable/runs/${holder}`);
    expect(most).toBeLessThanOrEqual(60);
    // done and recorded, with the holder's workflow and key
    const [event] = await t.durable.listActivity({ kinds: ['dashboard_action'] });
    expect(event).toMatchObject({ runId: holder, details: { action: 'triggerSchedule', outcome: 'useExisting', workflow: 'abounds_node', key: 'k' } });
  });
});
