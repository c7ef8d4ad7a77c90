import { INestApplication } from '@nestjs/common';
import request from 'supertest';
import { RunContext, Step, Workflow } from '../../src';
import { DurableDashboardModule } from '../../src/dashboard';
import { createApp, TestApp } from '../support';

@Workflow('sched_page_a')
class A {
  @Step()
  async only(ctx: RunContext) {
    return ctx.input;
  }
}

@Workflow('sched_page_b')
class B {
  @Step()
  async only(ctx: RunContext) {
    return ctx.input;
  }
}

const BASE = '/api/durable';

/** An app serving the dashboard at /api/durable, without a worker. */
async function dashboardApp(): Promise<TestApp> {
  return createApp({
    workflows: [A, B],
    imports: [DurableDashboardModule.forRoot({})],
    options: { worker: false },
    http: (app: INestApplication) => app.setGlobalPrefix('api'),
  });
}

/** The schedule names a page lists, in order. */
const namesOn = (html: string) => [...html.matchAll(/<td>(s-\d+)<\/td>/g)].map((m) => m[1]);

describe('dashboard schedules (HTTP)', () => {
  it('the Schedules page lists 50 schedules a page by name, paged on; a workflow page its first 20 with a link to all of them', async () => {
    const t = await dashboardApp();
    const names = Array.from({ length: 60 }, (_, i) => `s-${String(i).padStart(3, '0')}`);
    for (const [i, name] of names.entries()) await t.durable.schedule(i % 2 ? 'sched_page_b' : 'sched_page_a', '0 0 1 1 *', { name });

    const first = (await request(t.server).get(`${BASE}/schedules`).expect(200)).text;
    expect(namesOn(first)).toEqual(names.slice(0, 50));
    const next = first.match(/<a rel="next" href="([^"]+)"/)?.[1].replace(/&amp;/g, '&');
    expect(next).toBe(`${BASE}/schedules?after=s-049`);
    const second = (await request(t.server).get(next!).expect(200)).text;
    expect(namesOn(second)).toEqual(names.slice(50));
    expect(second).not.toContain('rel="next"');
    expect(second).toContain(`<a rel="first" href="${BASE}/schedules">`);

    const ofA = names.filter((_, i) => i % 2 === 0);
    expect(namesOn((await request(t.server).get(`${BASE}/schedules?workflow=sched_page_a`).expect(200)).text)).toEqual(ofA);
    const wf = (await request(t.server).get(`${BASE}/workflows/sched_page_a`).expect(200)).text;
    expect(namesOn(wf)).toEqual(ofA.slice(0, 20));
    expect(wf).toContain(`href="${BASE}/schedules?workflow=sched_page_a"`);

    for (const bad of ['after=a%00b', 'workflow=a%00b', 'after=a&after=b']) {
      const res = await request(t.server).get(`${BASE}/schedules?${bad}`);
      expect([bad, res.status]).toEqual([bad, 400]);
    }
  });
});
