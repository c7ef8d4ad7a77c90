import { INestApplication } from '@nestjs/common';
import request from 'supertest';
import { RunContext, Step, Workflow } from '../../src';
import { DurableDashboardModule, type DurableDashboardOptions } from '../../src/dashboard';
import { DurableConnection } from '../../src/core/durable.connection';
import { DashboardReads } from '../../src/dashboard/dashboard-reads';
import { FLOW_NODES_SHOWN } from '../../src/dashboard/pages/flow.page';
import { DashboardStore } from '../../src/store/dashboard.store';
import { Db } from '../../src/store/db';
import { createApp, mostValuesRead, sql, TestApp } from '../support';

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

/** The texts of the statements sent while `fn` ran (every statement of the module goes through `Db.query`). */
async function statementsSent(fn: () => Promise<unknown>): Promise<string[]> {
  const sent: string[] = [];
  const original = Db.prototype.query;
  const spy = jest.spyOn(Db.prototype, 'query').mockImplementation(function (this: Db, ...args: Parameters<Db['query']>) {
    sent.push(args[0]);
    return original.apply(this, args);
  } as Db['query']);
  try {
    await fn();
  } finally {
    spy.mockRestore();
  }
  return sent;
}

describe('dashboard bounds: what a page reads', () => {
  it('the page of a run with 2,000 children reads 50 child ids and counts to 1,000, not every id', async () => {
    const t = await dashboardApp();
    const parent = (await t.durable.start('bounds_node', 0, { runAt: new Date(Date.now() + 3_600_000) })).runId;
    await sql(
      `insert into "${t.schema}".runs (id, workflow, parent_id, status, run_at)
       select gen_random_uuid(), 'bounds_node', $1, 'pending', now() + interval '1 hour' from generate_series(1, 2000)`,
      [parent],
    );
    const all = (await t.durable.getRun(parent))!.children; // the public read still gives every child id
    expect(all).toHaveLength(2000);
    let page = '';
    const most = await mostValuesRead(async () => {
      page = (await request(t.server).get(`${BASE}/runs/${parent}`).expect(200)).text;
    });
    expect(most).toBeLessThanOrEqual(60);
    // counted up to 1,000: 50 of the children (by id) and all of them through the search
    const shown = all.filter((id) => page.includes(`href="${BASE}/runs/${id}"`));
    expect(shown).toHaveLength(50);
    expect(page).toContain(`all 1000+ children →`);
    expect(page).toContain(`href="${BASE}/runs?q=parent%3A${parent}"`);
    // a search for the run's id opens it without reading its children either
    const opened = await mostValuesRead(async () => {
      await request(t.server).get(`${BASE}/runs?q=${parent}`).expect(303);
    });
    expect(opened).toBeLessThanOrEqual(60);
  });

  it('an action on a run with 2,000 children does not read every child id', async () => {
    const t = await dashboardApp({ readOnly: false });
    const parent = (await t.durable.start('bounds_node', 0, { runAt: new Date(Date.now() + 3_600_000) })).runId;
    await sql(
      `insert into "${t.schema}".runs (id, workflow, parent_id, status, run_at)
       select gen_random_uuid(), 'bounds_node', $1, 'pending', now() + interval '1 hour' from generate_series(1, 2000)`,
      [parent],
    );
    const most = await mostValuesRead(async () => {
      await request(t.server)
        .post(`${BASE}/runs/${parent}/send-event`)
        .set('Sec-Fetch-Site', 'same-origin')
        .type('form')
        .send({ name: 'nudge', payload: '1', buffer: 'true' })
        .expect(303);
    });
    expect(most).toBeLessThanOrEqual(60);
    // done and recorded
    const [event] = await t.durable.listActivity({ runId: parent, kinds: ['dashboard_action'] });
    expect(event).toMatchObject({ runId: parent, details: { action: 'sendEvent', name: 'nudge' } });
  });

  it('the page of a flow of 1,000 nodes reads counts per status and its first 200 nodes, with the same rerun buttons', async () => {
    const t = await dashboardApp({ readOnly: false });
    const { durable } = t;
    let builder = durable.flow({ name: 'big flow' });
    const name = (i: number) => `n${String(i).padStart(4, '0')}`;
    for (let i = 0; i < 1000; i++) {
      // n0500 depends on n0010 (listed), n0501 on n0011 (listed), n0601 on n0600 on n0012 (listed)
      const deps = { 500: [name(10)], 501: [name(11)], 600: [name(12)], 601: [name(600)] }[i] ?? [];
      builder = builder.add(name(i), 'bounds_node', i, { deps });
    }
    const flow = await durable.startFlow(builder);
    // every node finished but n0500 and n0601: n0010 and n0012, upstream of them, cannot be run again yet; n0011 can
    await sql(`update "${t.schema}".runs set status = 'completed', finished_at = now() where flow_id = $1 and name not in ('n0500', 'n0601', 'n0999')`, [
      flow.flowId,
    ]);
    await sql(`update "${t.schema}".runs set status = 'failed', finished_at = now() where flow_id = $1 and name = 'n0999'`, [flow.flowId]);
    let page = '';
    const most = await mostValuesRead(async () => {
      page = (await request(t.server).get(`${BASE}/flows/${flow.flowId}`).expect(200)).text;
    });
    expect(most).toBeLessThanOrEqual(210);
    expect(page).toContain('1000 nodes');
    expect(page).toContain(`all 1000 nodes →`);
    expect(page).toMatch(/completed<\/span><\/dt>\s*<dd>997<\/dd>/);
    expect(page).toMatch(/failed<\/span><\/dt>\s*<dd>1<\/dd>/);
    expect(page).toMatch(/<span class="badge[^"]*">(pending|waiting)<\/span><\/dt>\s*<dd>2<\/dd>/);
    expect(page.match(/<td>n\d{4}<\/td>/g)).toEqual(Array.from({ length: 200 }, (_, i) => `<td>${name(i)}</td>`));
    const rerun = [...page.matchAll(/name="from" value="(n\d{4})"/g)].map((m) => m[1]);
    expect(rerun).toEqual(Array.from({ length: 200 }, (_, i) => name(i)).filter((n) => n !== 'n0010' && n !== 'n0012'));
    expect(page).toContain('<td>n0010</td>');
    // with no node going, every node listed can be run again
    await sql(`update "${t.schema}".runs set status = 'completed', finished_at = now() where flow_id = $1 and name in ('n0500', 'n0601')`, [flow.flowId]);
    const done = (await request(t.server).get(`${BASE}/flows/${flow.flowId}`).expect(200)).text;
    expect([...done.matchAll(/name="from" value="(n\d{4})"/g)]).toHaveLength(200);
  });

  it("a flow read whole is counted from the nodes read, with no statement of its own; a bigger one's counts are read", async () => {
    const t = await dashboardApp({ readOnly: false });
    const { durable } = t;
    const small = await durable.startFlow(
      durable
        .flow()
        .add('a', 'bounds_node', 1)
        .add('b', 'bounds_node', 2, { deps: ['a'] })
        .add('c', 'bounds_node', 3, { deps: ['a'] }),
    );
    await sql(`update "${t.schema}".runs set status = 'completed', finished_at = now() where flow_id = $1 and name = 'a'`, [small.flowId]);
    const counting = (texts: string[]) => texts.filter((text) => /GROUP BY status/i.test(text));
    let page = '';
    const sent = await statementsSent(async () => {
      page = (await request(t.server).get(`${BASE}/flows/${small.flowId}`).expect(200)).text;
    });
    expect(counting(sent)).toEqual([]);
    // the counts as the statement counts them: statuses in the order of their first node
    const { pages } = t.app.get(DashboardReads).readers;
    const counts = [
      { status: 'completed', n: 1 },
      { status: 'pending', n: 2 },
    ];
    expect(await new DashboardStore(t.schema).flowCounts(t.app.get(DurableConnection).db, small.flowId)).toEqual(counts);
    expect(await pages.flow(small.flowId, FLOW_NODES_SHOWN, true)).toMatchObject({ counts, total: 3, more: false });

    let builder = durable.flow();
    for (let i = 0; i <= FLOW_NODES_SHOWN; i++) builder = builder.add(`n${String(i).padStart(3, '0')}`, 'bounds_node', i);
    const big = await durable.startFlow(builder);
    const bigSent = await statementsSent(async () => {
      page = (await request(t.server).get(`${BASE}/flows/${big.flowId}`).expect(200)).text;
    });
    expect(counting(bigSent)).toHaveLength(1);
    expect(page).toMatch(/pending<\/span><\/dt>\s*<dd>201<\/dd>/);
  });
});
