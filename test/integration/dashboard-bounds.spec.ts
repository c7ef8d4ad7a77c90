import { INestApplication } from '@nestjs/common';
import request from 'supertest';
import { RunContext, Step, Workflow } from '../../src';
import { DurableDashboardModule, type DurableDashboardOptions } from '../../src/dashboard';
import { createApp, sql, TestApp } from '../support';

@Workflow('bounds_node')
class Node {
  @Step()
  async only(ctx: RunContext) {
    return ctx.input;
  }
}

const BASE = '/api/durable';

/** An app serving the dashboard at /api/durable, without a worker. */
async function dashboardApp(dashboard: DurableDashboardOptions = {}): Promise<TestApp> {
  return createApp({
    workflows: [Node],
    imports: [DurableDashboardModule.forRoot(dashboard)],
    options: { worker: false },
    http: (app: INestApplication) => app.setGlobalPrefix('api'),
  });
}

/** A JSON value of about `bytes` bytes whose text is `fill` repeated. */
const blob = (fill: string, bytes: number) => ({ blob: fill.repeat(bytes) });

describe('dashboard bounds (HTTP)', () => {
  it('a run page and the activity page cut huge JSON values (inputs, re-adds’ dropped inputs) short and say so', async () => {
    const t = await dashboardApp();
    const { durable } = t;
    const run = (await durable.start('bounds_node', blob('a', 900_000), { key: 'big' })).runId;
    for (const fill of ['b', 'c', 'd']) await durable.start('bounds_node', blob(fill, 900_000), { key: 'big' });
    expect((await durable.listActivity({ runId: run, kinds: ['key_duplicate'] })).length).toBe(3);
    for (const page of [`/runs/${run}`, '/activity']) {
      const res = await request(t.server).get(`${BASE}${page}`).expect(200);
      expect([page, res.text.length < 500_000]).toEqual([page, true]);
      expect(res.text).toMatch(/… \d+ more bytes/);
    }
    const runPage = (await request(t.server).get(`${BASE}/runs/${run}`)).text;
    expect(runPage).toContain(`{\n  &quot;blob&quot;: &quot;${'a'.repeat(1000)}`); // the start of the value is shown
    expect(runPage).toContain('<code>$.blob</code> <del>&quot;aaaa'); // so is each re-add's diff
  });

  it('a re-add whose input differs at many JSON paths shows the first 20 and says how many more', async () => {
    const t = await dashboardApp();
    const fields = (v: number) => Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`f${String(i).padStart(2, '0')}`, v]));
    const run = (await t.durable.start('bounds_node', fields(1), { key: 'wide' })).runId;
    await t.durable.start('bounds_node', fields(2), { key: 'wide' });
    const page = (await request(t.server).get(`${BASE}/runs/${run}`).expect(200)).text;
    expect(page.match(/<li><code>\$\.f\d\d<\/code>/g)).toHaveLength(20);
    expect(page).toContain('<code>$.f19</code>');
    expect(page).toContain('and 10 more changed paths');
  });

  it('a run page lists its first children and links to the search of all of them', async () => {
    const t = await dashboardApp();
    const { durable } = t;
    const parent = (await durable.start('bounds_node', 0, { runAt: new Date(Date.now() + 3_600_000) })).runId;
    const children: string[] = [];
    for (let i = 0; i < 120; i += 20) {
      const batch = await Promise.all(Array.from({ length: 20 }, (_, j) => durable.start('bounds_node', i + j, { runAt: new Date(Date.now() + 3_600_000) })));
      children.push(...batch.map((r) => r.runId));
    }
    await sql(`update "${t.schema}".runs set parent_id = $1 where id = any($2::uuid[])`, [parent, children]);
    expect((await durable.getRun(parent))?.children).toHaveLength(120);
    const page = (await request(t.server).get(`${BASE}/runs/${parent}`).expect(200)).text;
    const shown = children.filter((id) => page.includes(`href="${BASE}/runs/${id}"`));
    expect(shown.length).toBe(50);
    expect(page).toContain(`href="${BASE}/runs?q=parent%3A${parent}"`);
    expect(page).toContain('120 children');
  });
  it('a flow of more nodes than are drawn lists its first nodes with counts per status and links to the search of all of them', async () => {
    const t = await dashboardApp();
    const { durable } = t;
    let builder = durable.flow({ name: 'wide flow' });
    for (let i = 0; i < 250; i++) builder = builder.add(`n${String(i).padStart(3, '0')}`, 'bounds_node', i);
    const flow = await durable.startFlow(builder);
    const page = (await request(t.server).get(`${BASE}/flows/${flow.flowId}`).expect(200)).text;
    expect(page).not.toMatch(/<svg\s+class="flow"/);
    expect(page).not.toContain('flowchart TD');
    expect(page).toContain('250 nodes');
    expect(page).toMatch(/pending<\/span><\/dt>\s*<dd>250<\/dd>/);
    expect(page.match(/<td>n\d\d\d<\/td>/g)).toHaveLength(200);
    expect(page).toContain(`href="${BASE}/runs?q=flow%3A${flow.flowId}"`);
    // a flow of fewer nodes is drawn as before
    const small = await durable.startFlow(durable.flow().add('a', 'bounds_node', 1));
    expect((await request(t.server).get(`${BASE}/flows/${small.flowId}`).expect(200)).text).toMatch(/<svg\s+class="flow"/);
  });
});
