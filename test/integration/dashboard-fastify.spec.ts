import { CanActivate, ExecutionContext, Injectable, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { readFileSync } from 'fs';
import * as path from 'path';
import { DurableModule, DurableService, RunContext, Step, Workflow } from '../../src';
import { DASHBOARD_CSP, DurableDashboardModule, type DurableDashboardOptions } from '../../src/dashboard';
import { testOptions } from '../support';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyPluginCallback } from 'fastify';

/**
 * The dashboard on an app served by Fastify (`@nestjs/platform-fastify`), over real HTTP: pages,
 * assets, the security headers, a guard's refusal and the actions (urlencoded forms answered with
 * 303 redirects).
 *
 * Skipped where the installed adapter is not of @nestjs/core's major (the compat pass installs
 * NestJS 11 without it, and the repository's adapter would load a second @nestjs/core).
 */

const majorOf = (pkg: string): number =>
  Number((JSON.parse(readFileSync(require.resolve(`${pkg}/package.json`), 'utf8')) as { version: string }).version.split('.')[0]);

function adapterMatchesCore(): boolean {
  try {
    return majorOf('@nestjs/platform-fastify') === majorOf('@nestjs/core');
  } catch {
    return false;
  }
}

const describeOnFastify = adapterMatchesCore() ? describe : describe.skip;

@Workflow('dashboard_fastify_node')
class FastifyNode {
  @Step()
  async only(ctx: RunContext) {
    return ctx.input;
  }
}

/** Lets a request through only with `x-admin: yes`. */
@Injectable()
class AdminHeader implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    return context.switchToHttp().getRequest<{ headers: Record<string, unknown> }>().headers['x-admin'] === 'yes';
  }
}

interface FastifyDashboard {
  app: INestApplication;
  durable: DurableService;
  /** `http://127.0.0.1:<port>/api/durable`. */
  base: string;
  /** `127.0.0.1:<port>`. */
  host: string;
}

const open: INestApplication[] = [];

afterEach(async () => {
  for (const app of open.splice(0)) await app.close();
});

/** An app on the Fastify adapter, listening on a free port, with the dashboard under the global prefix `api`. */
async function fastifyDashboard(dashboard: DurableDashboardOptions, setUp?: (app: NestFastifyApplication) => Promise<void> | void): Promise<FastifyDashboard> {
  const { FastifyAdapter } = await import('@nestjs/platform-fastify');
  const moduleRef = await Test.createTestingModule({
    imports: [DurableModule.forRoot(testOptions({ options: { worker: false } }) as never), DurableDashboardModule.forRoot(dashboard)],
    providers: [FastifyNode, AdminHeader],
  }).compile();
  const app = moduleRef.createNestApplication<NestFastifyApplication>(new FastifyAdapter(), { logger: false, bodyParser: !setUp });
  open.push(app);
  app.setGlobalPrefix('api');
  await setUp?.(app);
  await app.listen(0, '127.0.0.1');
  const host = new URL(await app.getUrl()).host.replace('[::1]', '127.0.0.1');
  return { app, durable: app.get(DurableService), base: `http://${host}/api/durable`, host };
}

const ADMIN = { 'x-admin': 'yes' };

/** A form POST as a browser sends it from a dashboard page. */
function post(url: string, form: Record<string, string> = {}, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'same-origin', ...ADMIN, ...headers },
    body: new URLSearchParams(form).toString(),
  });
}

const get = (url: string, headers: Record<string, string> = ADMIN): Promise<Response> => fetch(url, { redirect: 'manual', headers });

function expectSecurityHeaders(res: Response, what: string): void {
  expect([what, res.headers.get('content-security-policy')]).toEqual([what, DASHBOARD_CSP]);
  expect([what, res.headers.get('x-content-type-options')]).toEqual([what, 'nosniff']);
  expect([what, res.headers.get('x-frame-options')]).toEqual([what, 'DENY']);
  expect([what, res.headers.get('cache-control')]).toEqual([what, 'no-store']);
  expect([what, res.headers.get('referrer-policy')]).toEqual([what, 'same-origin']);
}

/** A run that stays pending (no worker, due in an hour). */
async function pendingRun(durable: DurableService, input: unknown = 1): Promise<string> {
  return (await durable.start('dashboard_fastify_node', input, { runAt: new Date(Date.now() + 3_600_000) })).runId;
}

describeOnFastify('dashboard on the Fastify adapter (HTTP)', () => {
  it('serves its pages as HTML with the security headers, the nav links included', async () => {
    const t = await fastifyDashboard({ guards: [AdminHeader] });
    const run = await pendingRun(t.durable, { article: 42 });
    for (const [path, text] of [
      ['', 'dashboard_fastify_node'],
      ['/runs', run],
      [`/runs/${run}`, '&quot;article&quot;: 42'],
      ['/workflows', 'dashboard_fastify_node'],
      ['/workflows/dashboard_fastify_node', 'dashboard_fastify_node'],
      ['/keys', 'Keys'],
      ['/schedules', 'Schedules'],
      ['/activity', 'Activity'],
      ['/nodes', 'Nodes'],
    ]) {
      const res = await get(`${t.base}${path}`);
      const body = await res.text();
      expect([path, res.status]).toEqual([path, 200]);
      expect([path, res.headers.get('content-type')]).toEqual([path, 'text/html; charset=utf-8']);
      expect([path, body.includes(text)]).toEqual([path, true]);
      expectSecurityHeaders(res, path);
    }
    // every link of the header (the overview's included) and the error page's link back lead to a page
    const overview = await (await get(t.base)).text();
    const notFound = await (await get(`${t.base}/runs/01234567-89ab-7def-8123-456789abcdef`)).text();
    const links = [...overview.matchAll(/<a (?:class="brand" )?href="([^"]+)">/g), ...notFound.matchAll(/<a href="([^"]+)">back to the overview/g)].map(
      (m) => m[1],
    );
    expect(links).toEqual(expect.arrayContaining(['/api/durable', '/api/durable/runs', '/api/durable/nodes']));
    expect(links.filter((href) => href === '/api/durable')).toHaveLength(3);
    for (const href of links) expect([href, (await get(`http://${t.host}${href}`)).status]).toEqual([href, 200]);
  });

  it('sends the overview with a trailing slash (/api/durable/) on to the overview, its query kept', async () => {
    const t = await fastifyDashboard({ guards: [AdminHeader] });
    for (const [path, location] of [
      ['/', '/api/durable'],
      ['/?x=1&y=%2F', '/api/durable?x=1&y=%2F'],
    ]) {
      const res = await get(`${t.base}${path}`, {});
      expect([path, res.status, res.headers.get('location')]).toEqual([path, 301, location]);
      expectSecurityHeaders(res, path);
    }
    // where it leads, the guards decide
    expect((await get(`http://${t.host}/api/durable`, {})).status).toBe(403);
    const overview = await get(`${t.base}/`);
    expect((await get(`http://${t.host}${overview.headers.get('location')}`)).status).toBe(200);
    // the other pages are as they were: a trailing slash is not found there
    expect((await get(`${t.base}/runs/`)).status).toBe(404);
  });

  it('adds nothing to an app whose Fastify ignores trailing slashes: /api/durable/ is the overview', async () => {
    const { FastifyAdapter } = await import('@nestjs/platform-fastify');
    const moduleRef = await Test.createTestingModule({
      imports: [DurableModule.forRoot(testOptions({ options: { worker: false } }) as never), DurableDashboardModule.forRoot({})],
      providers: [FastifyNode],
    }).compile();
    const app = moduleRef.createNestApplication<NestFastifyApplication>(new FastifyAdapter({ ignoreTrailingSlash: true }), { logger: false });
    open.push(app);
    await app.listen(0, '127.0.0.1');
    const host = new URL(await app.getUrl()).host.replace('[::1]', '127.0.0.1');
    const res = await get(`http://${host}/durable/`, {});
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('dashboard_fastify_node');
  });

  it('serves its stylesheet and script with their types and the security headers', async () => {
    const t = await fastifyDashboard({ guards: [AdminHeader] });
    const css = await get(`${t.base}/assets/dashboard.css`);
    expect(css.status).toBe(200);
    expect(css.headers.get('content-type')).toBe('text/css; charset=utf-8');
    expect(await css.text()).toContain(':root{');
    expectSecurityHeaders(css, 'css');
    const js = await get(`${t.base}/assets/dashboard.js`);
    expect(js.status).toBe(200);
    expect(js.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect((await js.text()).length).toBeGreaterThan(0);
    expectSecurityHeaders(js, 'js');
  });

  it('a guard that refuses answers 403 with the security headers, for a page, an asset and an action', async () => {
    const t = await fastifyDashboard({ guards: [AdminHeader], readOnly: false });
    const run = await pendingRun(t.durable);
    for (const [what, res] of [
      ['page', await get(`${t.base}/runs`, {})],
      ['asset', await get(`${t.base}/assets/dashboard.js`, {})],
      ['action', await post(`${t.base}/runs/${run}/cancel`, {}, { 'x-admin': 'no' })],
    ] as const) {
      expect([what, res.status]).toEqual([what, 403]);
      expectSecurityHeaders(res, what);
    }
    expect((await t.durable.getRun(run))?.status).toBe('pending');
  });

  it('an action posted as a urlencoded form is done, recorded and answered with a 303 to the run page', async () => {
    const t = await fastifyDashboard({ guards: [AdminHeader], readOnly: false, actor: () => 'ops@example.com' });
    const run = await pendingRun(t.durable);

    // kept for the pending run (the checkbox): a dropped event would answer 409
    const sent = await post(`${t.base}/runs/${run}/send-event`, { name: 'approved', payload: '{"by":"ops"}', buffer: 'true' });
    expect(sent.status).toBe(303);
    expect(sent.headers.get('location')).toBe(`/api/durable/runs/${run}`);
    expectSecurityHeaders(sent, 'send-event');

    // same origin told by Origin (no Sec-Fetch-Site), as older browsers send it
    const cancelled = await fetch(`${t.base}/runs/${run}/cancel`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: `http://${t.host}`, ...ADMIN },
      body: '',
    });
    expect(cancelled.status).toBe(303);
    expect(cancelled.headers.get('location')).toBe(`/api/durable/runs/${run}`);
    expect((await t.durable.getRun(run))?.status).toBe('cancelled');

    const actions = await t.durable.listActivity({ kinds: ['dashboard_action'] });
    expect(actions.map((a) => [a.runId, (a.details as Record<string, unknown>).action, (a.details as Record<string, unknown>).actor])).toEqual([
      [run, 'cancel', 'ops@example.com'],
      [run, 'sendEvent', 'ops@example.com'],
    ]);
    expect((actions[1].details as Record<string, unknown>).name).toBe('approved');

    const rerun = await post(`${t.base}/runs/${run}/rerun`);
    expect(rerun.status).toBe(303);
    const newRun = ((await t.durable.listActivity({ kinds: ['dashboard_action'] }))[0].details as Record<string, unknown>).newRunId;
    expect(typeof newRun).toBe('string');
    expect(rerun.headers.get('location')).toBe(`/api/durable/runs/${String(newRun)}`);
  });

  it('pause answers 303 to the workflow page; a bad form, another origin and a read-only dashboard are refused with their status', async () => {
    const t = await fastifyDashboard({ guards: [AdminHeader], readOnly: false });
    const run = await pendingRun(t.durable);

    const paused = await post(`${t.base}/workflows/dashboard_fastify_node/pause`);
    expect(paused.status).toBe(303);
    expect(paused.headers.get('location')).toBe('/api/durable/workflows/dashboard_fastify_node');

    const notJson = await post(`${t.base}/runs/${run}/send-event`, { name: 'approved', payload: '{nope' });
    expect(notJson.status).toBe(400);
    expect(notJson.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(await notJson.text()).toContain('payload is not JSON');

    const twice = await fetch(`${t.base}/runs/${run}/send-event`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'same-origin', ...ADMIN },
      body: 'name=a&name=b',
    });
    expect(twice.status).toBe(400);

    const crossSite = await post(`${t.base}/runs/${run}/cancel`, {}, { 'sec-fetch-site': 'cross-site' });
    expect(crossSite.status).toBe(403);
    expectSecurityHeaders(crossSite, 'cross-site');
    expect((await t.durable.getRun(run))?.status).toBe('pending');
  });

  it('a search for a run id answers 303 to the run page', async () => {
    const t = await fastifyDashboard({ guards: [AdminHeader] });
    const run = await pendingRun(t.durable);
    const res = await get(`${t.base}/runs?q=${run}`);
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe(`/api/durable/runs/${run}`);
    const readOnly = await post(`${t.base}/runs/${run}/cancel`);
    expect(readOnly.status).toBe(403);
  });

  it("an app without Nest's body parsers (bodyParser: false) answers 415 to an action until it registers @fastify/formbody", async () => {
    const bare = await fastifyDashboard({ guards: [AdminHeader], readOnly: false }, () => undefined);
    const run = await pendingRun(bare.durable);
    expect((await post(`${bare.base}/runs/${run}/cancel`)).status).toBe(415);
    expect((await bare.durable.getRun(run))?.status).toBe('pending');

    // @fastify/formbody, as the adapter itself depends on it (the version made for its Fastify)
    const formBodyPath = require.resolve('@fastify/formbody', { paths: [path.dirname(require.resolve('@nestjs/platform-fastify'))] });
    const { default: formBody } = (await import(formBodyPath)) as { default: FastifyPluginCallback };
    const t = await fastifyDashboard({ guards: [AdminHeader], readOnly: false }, async (app) => {
      await app.register(formBody);
    });
    const other = await pendingRun(t.durable);
    const sent = await post(`${t.base}/runs/${other}/send-event`, { name: 'approved', payload: '1', buffer: 'true' });
    expect(sent.status).toBe(303);
    expect(sent.headers.get('location')).toBe(`/api/durable/runs/${other}`);
    expect(((await t.durable.listActivity({ kinds: ['dashboard_action'] }))[0].details as Record<string, unknown>).name).toBe('approved');
  });
});
