import { CanActivate, INestApplication, Injectable } from '@nestjs/common';
import request from 'supertest';
import { RunContext, Step, Workflow } from '../../src';
import { DASHBOARD_CSP, DurableDashboardModule, type DurableDashboardOptions } from '../../src/dashboard';
import { createApp, TestApp } from '../support';

@Workflow('requests_node')
class Node {
  @Step()
  async only(ctx: RunContext) {
    return ctx.input;
  }
}

/** Refuses every request. */
@Injectable()
class Nobody implements CanActivate {
  canActivate(): boolean {
    return false;
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

describe('dashboard requests: bad parameters, unknown flows, refusals (HTTP)', () => {
  it('a malformed run id answers 400 saying it is not a run id; a well-formed unknown one 404', async () => {
    const t = await dashboardApp({ readOnly: false });
    for (const [method, path] of [
      ['get', '/runs/not-a-run'],
      ['get', '/runs/%00'],
      ['post', '/runs/not-a-run/cancel'],
      ['post', '/runs/not-a-run/send-event'],
    ] as const) {
      const res = await request(t.server)[method](`${BASE}${path}`).set('Sec-Fetch-Site', 'same-origin').type('form').send({ name: 'e' });
      expect([method, path, res.status]).toEqual([method, path, 400]);
      expect(res.headers['content-type']).toMatch(/^text\/html/);
      expect(res.text).toMatch(/is not a run id \(a UUID\)/);
    }
    expect((await request(t.server).get(`${BASE}/runs/01234567-89ab-7def-8123-456789abcdef`)).status).toBe(404);
  });

  it('the overview with a trailing slash (/api/durable/) is the overview (Express)', async () => {
    const t = await dashboardApp();
    await t.durable.start('requests_node', 1, { runAt: new Date(Date.now() + 3_600_000) });
    const res = await request(t.server).get(`${BASE}/`);
    expect(res.status).toBe(200);
    expect(res.text).toContain('requests_node');
    expect(res.headers['content-security-policy']).toBe(DASHBOARD_CSP);
  });

  it('an unknown flow answers 404 saying no flow has that id', async () => {
    const t = await dashboardApp();
    const res = await request(t.server).get(`${BASE}/flows/no-such-flow`);
    expect(res.status).toBe(404);
    expect(res.text).toContain('flow no-such-flow not found');
  });

  it('rerunning a node of an unknown flow answers 404 saying no flow has that id', async () => {
    const t = await dashboardApp({ readOnly: false });
    const res = await request(t.server).post(`${BASE}/flows/no-such-flow/rerun`).set('Sec-Fetch-Site', 'same-origin').type('form').send({ from: 'a' });
    expect(res.status).toBe(404);
    expect(res.text).toContain('flow no-such-flow not found');
  });

  it('a request the guards refuse still carries the security headers (CSP, nosniff, no-store)', async () => {
    const t = await dashboardApp({ guards: [Nobody] });
    for (const page of ['/', '/runs', '/assets/dashboard.js']) {
      const res = await request(t.server).get(`${BASE}${page}`);
      expect([page, res.status]).toEqual([page, 403]);
      expect(res.headers['x-content-type-options']).toBe('nosniff');
      expect(res.headers['cache-control']).toBe('no-store');
      expect(res.headers['content-security-policy']).toBe(DASHBOARD_CSP);
    }
  });
  it('an action whose actor cannot be told (the actor option throws) is refused before anything changes, so no action goes unrecorded', async () => {
    const t = await dashboardApp({
      readOnly: false,
      actor: () => {
        throw new Error('no session');
      },
    });
    const run = (await t.durable.start('requests_node', 1, { runAt: new Date(Date.now() + 3_600_000) })).runId;
    const res = await request(t.server).post(`${BASE}/runs/${run}/cancel`).set('Sec-Fetch-Site', 'same-origin');
    expect(res.status).toBe(500);
    expect((await t.durable.getRun(run))?.status).toBe('pending');
    expect(await t.durable.listActivity({ kinds: ['dashboard_action'] })).toEqual([]);
  });
});
