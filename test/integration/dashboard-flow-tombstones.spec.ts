/**
 * A flow's page offers "Rerun from here" only where `rerunFlow` would take it: a node that is a key
 * tombstone (pruned: its input is gone), or that one is downstream of, is refused, so it gets no
 * button but a word on why.
 */
import { INestApplication } from '@nestjs/common';
import request from 'supertest';
import { RunContext, Step, Workflow } from '../../src';
import { DurableDashboardModule } from '../../src/dashboard';
import { createApp, ident, sql, TestApp } from '../support';

@Workflow('tomb_node', { reuse: 'never' })
class Node {
  @Step()
  async only(ctx: RunContext) {
    return ctx.input;
  }
}

const BASE = '/api/durable';

/** An app serving the dashboard with actions at /api/durable, without a worker. */
async function dashboardApp(): Promise<TestApp> {
  return createApp({
    workflows: [Node],
    imports: [DurableDashboardModule.forRoot({ readOnly: false })],
    options: { worker: false, retention: { keys: '2d' } },
    http: (app: INestApplication) => app.setGlobalPrefix('api'),
  });
}

/** Finishes every node of flow `flowId`, then makes the nodes `names` key tombstones as the prune does. */
async function finishWithTombstones(t: TestApp, flowId: string, names: string[]) {
  const S = ident(t.schema);
  await sql(`update ${S}.runs set status = 'completed', finished_at = now() where flow_id = $1`, [flowId]);
  await sql(
    `update ${S}.runs set pruned_at = now(), input = NULL, context = '{}', result = NULL, results = '{}', error = NULL, trace = NULL, last_status = NULL
     where flow_id = $1 and name = any($2::text[])`,
    [flowId, names],
  );
}

/** The nodes the page of flow `flowId` offers to run again. */
async function rerunButtons(t: TestApp, flowId: string): Promise<{ page: string; from: string[] }> {
  const page = (await request(t.server).get(`${BASE}/flows/${flowId}`).expect(200)).text;
  return { page, from: [...page.matchAll(/name="from" value="([^"]+)"/g)].map((m) => m[1]) };
}

/** Posts the rerun of flow `flowId` from node `from`, as the button does. */
const rerun = (t: TestApp, flowId: string, from: string) =>
  request(t.server).post(`${BASE}/flows/${flowId}/rerun`).set('Sec-Fetch-Site', 'same-origin').type('form').send({ from });

describe('dashboard: rerun of a flow with key tombstones', () => {
  it('a drawn flow offers no rerun from a tombstone nor from a node upstream of one, and says why', async () => {
    const t = await dashboardApp();
    const { durable } = t;
    // a → b → c, and d alone; b is keyed and becomes a tombstone
    const flow = await durable.startFlow(
      durable
        .flow()
        .add('a', Node, 1)
        .add('b', Node, 2, { deps: ['a'], key: 'tomb-b' })
        .add('c', Node, 3, { deps: ['b'] })
        .add('d', Node, 4),
    );
    await finishWithTombstones(t, flow.flowId, ['b']);
    const { page, from } = await rerunButtons(t, flow.flowId);
    expect(from.sort()).toEqual(['c', 'd']);
    expect(page).toContain('pruned: its input is gone');
    expect(page).toContain('a node downstream of it was pruned');
    // what the page says is what rerunFlow does: from a it refuses, from c it runs again
    expect((await rerun(t, flow.flowId, 'a').expect(404)).text).toMatch(/was pruned/);
    await rerun(t, flow.flowId, 'c').expect(303);
  });

  it('a flow too big to draw tells it of the nodes it lists, the tombstone listed or not', async () => {
    const t = await dashboardApp();
    const { durable } = t;
    const name = (i: number) => `n${String(i).padStart(4, '0')}`;
    let builder = durable.flow();
    for (let i = 0; i < 250; i++) {
      // n0220 (not listed) depends on n0005 (listed); n0007 (listed) is a tombstone itself
      const deps = i === 220 ? [name(5)] : [];
      builder = builder.add(name(i), Node, i, { deps, key: i === 220 || i === 7 ? `tomb-${i}` : undefined });
    }
    const flow = await durable.startFlow(builder);
    await finishWithTombstones(t, flow.flowId, [name(220), name(7)]);
    const { page, from } = await rerunButtons(t, flow.flowId);
    expect(page).toContain('250 nodes');
    expect(from).toEqual(Array.from({ length: 200 }, (_, i) => name(i)).filter((n) => n !== name(5) && n !== name(7)));
    expect(page).toContain('pruned: its input is gone');
    expect(page).toContain('a node downstream of it was pruned');
    expect((await rerun(t, flow.flowId, name(5)).expect(404)).text).toMatch(/was pruned/);
  });
});
