import { CallHandler, CanActivate, ExecutionContext, Injectable, INestApplication, NestInterceptor } from '@nestjs/common';
import request from 'supertest';
import { RunContext, Step, Workflow } from '../../src';
import { DASHBOARD_CSP, DurableDashboardModule, type DurableDashboardOptions } from '../../src/dashboard';
import { createApp, sql, TestApp, waitFor } from '../support';

@Workflow('dash_article')
class Article {
  @Step()
  async fetch(ctx: RunContext) {
    return ctx.input;
  }

  @Step()
  async approve(ctx: RunContext) {
    return ctx.waitForInput<string>('approval');
  }
}

@Workflow('dash_fail')
class Fail {
  @Step({ retry: { attempts: 1 } })
  async boom() {
    throw new Error('boom');
  }
}

@Workflow('dash_node')
class Node {
  @Step()
  async only(ctx: RunContext) {
    return ctx.input;
  }
}

/** Lets a request in only with an `x-user` header. */
@Injectable()
class NeedsUser implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    return typeof context.switchToHttp().getRequest<{ headers: Record<string, string> }>().headers['x-user'] === 'string';
  }
}

/** A global interceptor of the host app: marks every response. */
class MarkResponses implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler) {
    context.switchToHttp().getResponse<{ setHeader(n: string, v: string): void }>().setHeader('x-host-interceptor', 'yes');
    return next.handle();
  }
}

const XSS_KEY = '<script>alert("k")</script>';
const XSS_INPUT = { html: '<img src=x onerror=alert(1)>' };

/** An app serving the dashboard at /api/durable (global prefix `api`). */
async function dashboardApp(dashboard: DurableDashboardOptions, options: Record<string, unknown> = { worker: false }): Promise<TestApp> {
  return createApp({
    workflows: [Article, Fail, Node],
    providers: [NeedsUser],
    imports: [DurableDashboardModule.forRoot(dashboard)],
    options,
    http: (app: INestApplication) => {
      app.setGlobalPrefix('api');
      app.useGlobalInterceptors(new MarkResponses());
    },
  });
}

/** Seeds a keyed run re-added twice (once with another input), a run with a hostile key and input, a flow and a schedule. */
async function seed(t: TestApp) {
  const { durable } = t;
  const article = await durable.start('dash_article', { title: 'first', body: 'x' }, { key: 'article:42' });
  await durable.start('dash_article', { title: 'second', body: 'x' }, { key: 'article:42' });
  await durable.start('dash_article', { title: 'first', body: 'x' }, { key: 'article:42' });
  const xss = await durable.start('dash_node', XSS_INPUT, { key: XSS_KEY });
  const flow = await durable.startFlow(
    durable
      .flow({ name: 'dash flow' })
      .add('a', 'dash_node', 1)
      .add('b', 'dash_node', 2, { deps: ['a'] }),
  );
  await durable.schedule('dash_node', '0 0 1 1 *', { name: 'dash_yearly' });
  return { article: article.runId, xss: xss.runId, flow };
}

const BASE = '/api/durable';

describe('dashboard (HTTP)', () => {
  it('serves every page as HTML under the global prefix with a strict CSP, through the host’s global interceptors', async () => {
    const t = await dashboardApp({});
    const s = await seed(t);
    const pages = [
      '/',
      '/runs',
      `/runs/${s.article}`,
      '/keys',
      '/keys?workflow=dash_article',
      '/workflows',
      '/workflows/dash_article',
      `/flows/${s.flow.flowId}`,
      '/schedules',
      '/activity',
      '/nodes',
    ];
    for (const page of pages) {
      const res = await request(t.server).get(`${BASE}${page}`);
      expect([page, res.status]).toEqual([page, 200]);
      expect(res.headers['content-type']).toMatch(/^text\/html/);
      expect(res.headers['content-security-policy']).toBe(DASHBOARD_CSP);
      expect(res.headers['x-host-interceptor']).toBe('yes');
      expect(res.text).not.toMatch(/<script>|<style|style="|onerror=|onclick=/i);
      expect(res.text).toContain(`href="${BASE}/assets/dashboard.css"`);
    }
    const css = await request(t.server).get(`${BASE}/assets/dashboard.css`);
    expect([css.status, css.headers['content-type']]).toEqual([200, expect.stringMatching(/^text\/css/)]);
    const js = await request(t.server).get(`${BASE}/assets/dashboard.js`);
    expect([js.status, js.headers['content-type']]).toEqual([200, expect.stringMatching(/^text\/javascript/)]);
    expect((await request(t.server).get('/durable/runs')).status).toBe(404); // only under the prefix
  });

  it("the Key panel counts re-adds in words: 'added again 1 time', '0 times'", async () => {
    const t = await dashboardApp({});
    const once = await t.durable.start('dash_node', 1, { key: 'added-once' });
    const never = await t.durable.start('dash_node', 1, { key: 'added-never' });
    await t.durable.start('dash_node', 1, { key: 'added-once' });
    const page = async (id: string) => (await request(t.server).get(`${BASE}/runs/${id}`).expect(200)).text;
    expect(await page(once.runId)).toContain('added again <strong>1</strong> time</p>');
    expect(await page(never.runId)).toContain('added again <strong>0</strong> times</p>');
  });

  it('the pages show what they are for: overview counts, the Key panel with its diff, the flow graph, keys, workflow Keys section, schedules, activity, nodes', async () => {
    const t = await dashboardApp({});
    const s = await seed(t);
    const get = async (path: string) => (await request(t.server).get(`${BASE}${path}`).expect(200)).text;
    expect(await get('/')).toMatch(/dash_article<\/a><\/td>\s*<td class="num">\s*<a href="[^"]+status%3Apending">1<\/a>/); // 1 pending
    const run = await get(`/runs/${s.article}`);
    expect(run).toContain('added again <strong>2</strong> times');
    expect(run).toMatch(/a start with this key now: <span class="badge">useExisting<\/span>/);
    expect(run).toContain('<code>$.title</code> <del>&quot;first&quot;</del> <ins>&quot;second&quot;</ins>');
    expect(run).toMatch(/same input/);
    expect(run).toContain('article:42');
    expect(run).not.toContain('<form'.concat(' class="action"')); // read-only: no actions
    const flow = await get(`/flows/${s.flow.flowId}`);
    expect(flow).toMatch(/<svg\s+class="flow"/);
    expect(flow).toContain('class="node status-pending"');
    expect(flow).toContain(`href="${BASE}/runs/${s.flow.runIds.a}"`);
    expect(flow).toContain('flowchart TD'); // Mermaid
    expect(flow).toContain('digraph'); // DOT
    const keys = await get('/keys');
    expect(keys).toContain('article:42');
    expect(keys).toContain(`href="${BASE}/runs/${s.article}"`);
    const wf = await get('/workflows/dash_article');
    expect(wf).toContain('id="keys-section"');
    expect(wf).toMatch(/<svg\s+class="chart"[^>]*>[\s\S]*<rect\s+class="bar"/);
    expect(wf).toMatch(/Re-adds: useExisting<\/dt>\s*<dd>2/);
    expect(await get('/schedules')).toContain('dash_yearly');
    expect(await get('/activity')).toContain('key_duplicate');
    expect(await get('/nodes')).toMatch(/no node|<td class="mono">/);
    expect((await request(t.server).get(`${BASE}/runs/01234567-89ab-7def-8123-456789abcdef`)).status).toBe(404);
    expect((await request(t.server).get(`${BASE}/workflows/nope`)).status).toBe(404);
  });

  it('search: key: splits at the first colon, quotes, a bare run id opens the run, an unknown qualifier or bad value answers 400 with a message', async () => {
    const t = await dashboardApp({});
    const s = await seed(t);
    const search = (q: string) => request(t.server).get(`${BASE}/runs`).query({ q });
    const found = await search('key:article:42').expect(200);
    expect(found.text).toContain(`href="${BASE}/runs/${s.article}"`);
    expect(found.text).not.toContain(s.xss);
    expect((await search(`workflow:dash_node key:${XSS_KEY}`).expect(200)).text).toContain(s.xss);
    expect((await search('status:pending workflow:dash_article').expect(200)).text).toContain(s.article);
    expect((await search('key:"article:42" workflow:dash_article').expect(200)).text).toContain(s.article);
    expect((await search('key:"no such key"').expect(200)).text).toContain('no run matches');
    expect((await search(`flow:${s.flow.flowId}`).expect(200)).text).toContain(s.flow.runIds.b);
    expect((await search('waiting:deps').expect(200)).text).toContain(s.flow.runIds.b);
    const opened = await search(s.article).expect(303);
    expect(opened.headers.location).toBe(`${BASE}/runs/${s.article}`);
    for (const [q, message] of [
      ['colour:red', 'unknown qualifier &quot;colour:&quot;'],
      ['status:sleepy', 'status:sleepy is not a status'],
      ['waiting:forever', 'waiting:forever is not a wait'],
      ['parent:nope', 'parent:nope is not a run id'],
      ['key:"open', 'a quote is left open'],
      ['hello', '&quot;hello&quot; is not a run id'],
    ]) {
      const res = await search(q);
      expect([q, res.status]).toEqual([q, 400]);
      expect(res.text).toContain(message);
    }
    expect((await request(t.server).get(`${BASE}/runs`).query({ before: 'x' })).status).toBe(400);
  });

  it('a search or filter value Postgres cannot hold (a NUL character) answers 400, never a server error', async () => {
    const t = await dashboardApp({});
    await seed(t);
    for (const path of [
      '/runs?q=key:a%00b',
      '/runs?q=workflow:a%00b',
      '/runs?q=flow:a%00b',
      '/keys?q=a%00b',
      '/keys?workflow=a%00b',
      '/keys?workflow=dash_article&cursor=a%00b',
      '/activity?kind=a%00b',
    ]) {
      const res = await request(t.server).get(`${BASE}${path}`);
      expect([path, res.status]).toEqual([path, 400]);
      expect(res.text).toContain('NUL character');
    }
  });

  it('a key and an input holding <script> and onerror= are shown escaped', async () => {
    const t = await dashboardApp({});
    const s = await seed(t);
    for (const page of [`/runs/${s.xss}`, '/runs', '/keys', '/activity']) {
      const { text } = await request(t.server).get(`${BASE}${page}`).expect(200);
      expect(text).not.toContain(XSS_KEY);
      expect(text).not.toContain('<img');
    }
    const { text } = await request(t.server).get(`${BASE}/runs/${s.xss}`);
    expect(text).toContain('&lt;script&gt;alert(&quot;k&quot;)&lt;/script&gt;');
    expect(text).toContain('&lt;img src=x onerror=alert(1)&gt;');
  });

  it('read-only (the default): every POST answers 403 and changes nothing', async () => {
    const t = await dashboardApp({});
    const s = await seed(t);
    const before = await sql(`select id, status, holds_key, input from "${t.schema}".runs order by id`);
    const posts = [
      ...['cancel', 'retry', 'rerun', 'release-key'].map((a) => [`/runs/${s.article}/${a}`, {}] as const),
      [`/runs/${s.article}/provide-input`, { name: 'approval', value: '"yes"' }] as const,
      [`/runs/${s.article}/send-event`, { name: 'go', payload: '1' }] as const,
      ['/schedules/dash_yearly/trigger', {}] as const,
      ['/workflows/dash_node/pause', {}] as const,
      [`/flows/${s.flow.flowId}/rerun`, { from: 'a' }] as const,
    ];
    for (const [path, form] of posts) {
      const res = await request(t.server).post(`${BASE}${path}`).set('Origin', 'http://127.0.0.1').type('form').send(form);
      expect([path, res.status]).toEqual([path, 403]);
      expect(res.text).toContain('read-only');
    }
    expect(await sql(`select id, status, holds_key, input from "${t.schema}".runs order by id`)).toEqual(before);
    expect((await request(t.server).get(`${BASE}/flows/${s.flow.flowId}`).expect(200)).text).not.toContain('Rerun from here');
    expect(await sql(`select 1 from "${t.schema}".activity where kind = 'dashboard_action'`)).toEqual([]);
    expect(await sql(`select 1 from "${t.schema}".events`)).toEqual([]);
    expect(await sql(`select 1 from "${t.schema}".workflow_controls`)).toEqual([]);
  });

  it('the guards given to the module refuse an anonymous request on every route, assets included', async () => {
    const t = await dashboardApp({ guards: [NeedsUser] });
    for (const page of ['/', '/runs', '/assets/dashboard.css']) {
      expect((await request(t.server).get(`${BASE}${page}`)).status).toBe(403);
      expect((await request(t.server).get(`${BASE}${page}`).set('x-user', 'ada')).status).toBe(200);
    }
  });

  it('read-write: each action does its work, is recorded with its actor, and sends the browser back to the run', async () => {
    const t = await dashboardApp(
      { readOnly: false, actor: (req) => (req as { headers: Record<string, string> }).headers['x-user'], authorize: (action) => action !== 'rerun' },
      { worker: { concurrency: 3 } },
    );
    const { durable } = t;
    const post = (path: string, form: object | string = {}) =>
      request(t.server)
        .post(`${BASE}${path}`)
        .set('Origin', 'http://127.0.0.1')
        .set('Host', '127.0.0.1')
        .set('x-user', 'ada@example.com')
        .type('form')
        .send(form);
    const waiting = (await durable.start('dash_article', { title: 't' }, { key: 'rw:1' })).runId;
    await waitFor(async () => (await durable.getRun(waiting))?.waitingFor?.kind === 'input', { timeout: 20_000 });
    const page = (await request(t.server).get(`${BASE}/runs/${waiting}`).expect(200)).text;
    expect(page).toContain(`action="${BASE}/runs/${waiting}/provide-input"`);
    expect(page).toContain('name="value"');
    expect((await post(`/runs/${waiting}/provide-input`, { name: 'approval', value: 'not json' })).status).toBe(400);
    const provided = await post(`/runs/${waiting}/provide-input`, { name: 'approval', value: '"yes"' }).expect(303);
    expect(provided.headers.location).toBe(`${BASE}/runs/${waiting}`);
    expect((await durable.waitForRun(waiting, { timeout: 20_000 })).result).toBe('yes');

    await post(`/runs/${waiting}/release-key`).expect(303);
    expect((await durable.getRun(waiting))?.holdsKey).toBe(false);
    expect((await post(`/runs/${waiting}/rerun`)).status).toBe(403); // authorize said no

    const later = (await durable.start('dash_node', 1, { runAt: new Date(Date.now() + 3_600_000) })).runId;
    // a name sent as name[a]=x (an object) or twice (an array) is no name: 400, nothing sent or recorded
    for (const form of ['name[a]=x&payload=1', 'name=a&name=b&payload=1']) {
      expect([form, (await post(`/runs/${later}/send-event`, form)).status]).toEqual([form, 400]);
    }
    expect(await durable.listActivity({ runId: later })).toEqual([]);
    await post(`/runs/${later}/send-event`, { name: 'nudge', payload: '{"a":1}', buffer: 'true' }).expect(303);
    await post(`/runs/${later}/cancel`).expect(303);
    expect((await durable.getRun(later))?.status).toBe('cancelled');

    const failed = (await durable.start('dash_fail')).runId;
    await durable.waitForRun(failed, { timeout: 20_000 });
    await post(`/runs/${failed}/retry`).expect(303);
    // the retry ran the step again: a second failed attempt in its history
    await waitFor(async () => (await durable.getRunHistory(failed)).length === 2 && (await durable.getRun(failed))?.status === 'failed', { timeout: 20_000 });

    await durable.schedule('dash_node', '0 0 1 1 *', { name: 'dash_yearly', input: 7 });
    const fired = await post('/schedules/dash_yearly/trigger').expect(303);
    const firedId = String(fired.headers.location).split('/').pop()!;
    expect((await durable.waitForRun(firedId, { timeout: 20_000 })).result).toBe(7);

    const paused = await post('/workflows/dash_node/pause').expect(303);
    expect(paused.headers.location).toBe(`${BASE}/workflows/dash_node`);
    expect((await durable.listWorkflows()).find((w) => w.name === 'dash_node')?.paused).toBe(true);
    const pausedPage = (await request(t.server).get(`${BASE}/workflows/dash_node`).expect(200)).text;
    expect(pausedPage).toContain(`action="${BASE}/workflows/dash_node/resume"`);
    expect((await request(t.server).get(`${BASE}/workflows`).expect(200)).text).toContain('dash_node</a> (paused)');
    const held = (await durable.start('dash_node', 8)).runId;
    await post('/workflows/dash_node/resume').expect(303);
    expect((await durable.waitForRun(held, { timeout: 20_000 })).result).toBe(8);
    expect((await request(t.server).get(`${BASE}/workflows/dash_node`).expect(200)).text).toContain(`action="${BASE}/workflows/dash_node/pause"`);
    expect((await post('/workflows/dash_node/stop')).status).toBe(404);

    const actions = await durable.listActivity({ kinds: ['dashboard_action'] });
    expect(actions.map((a) => a.details.action).sort()).toEqual([
      'cancel',
      'pause',
      'provideInput',
      'releaseKey',
      'resume',
      'retry',
      'sendEvent',
      'triggerSchedule',
    ]);
    expect(actions.find((a) => a.details.action === 'pause')).toMatchObject({ runId: null, details: { workflow: 'dash_node' } });
    for (const a of actions) expect(a.details.actor).toBe('ada@example.com');
    // a pending run does not wait for it: kept, as the checkbox asked
    expect(actions.find((a) => a.details.action === 'sendEvent')?.details).toMatchObject({ name: 'nudge', outcome: 'kept', buffer: true });
    expect((await durable.listActivity({ kinds: ['key_released'] }))[0].details.by).toBe('ada@example.com');
  });

  it('read-write: a finished flow node is run again with its downstream nodes from the flow page, recorded with its actor', async () => {
    const t = await dashboardApp({ readOnly: false, actor: () => 'ops@example.com' }, { worker: { concurrency: 3 } });
    const { durable } = t;
    const post = (path: string, form: object) =>
      request(t.server).post(`${BASE}${path}`).set('Origin', 'http://127.0.0.1').set('Host', '127.0.0.1').type('form').send(form);
    const flow = await durable.startFlow(
      durable
        .flow({ name: 'rerun me' })
        .add('a', 'dash_node', 1)
        .add('b', 'dash_node', 2, { deps: ['a'] })
        .add('c', 'dash_node', 3),
    );
    await Promise.all(Object.values(flow.runIds).map((id) => durable.waitForRun(id, { timeout: 20_000 })));
    const page = (await request(t.server).get(`${BASE}/flows/${flow.flowId}`).expect(200)).text;
    expect(page.match(/Rerun from here/g)).toHaveLength(3);
    expect(page).toContain(`action="${BASE}/flows/${flow.flowId}/rerun"`);

    expect((await post(`/flows/${flow.flowId}/rerun`, { from: 'nope' })).status).toBe(400);
    const notOneField = await request(t.server)
      .post(`${BASE}/flows/${flow.flowId}/rerun`)
      .set('Origin', 'http://127.0.0.1')
      .set('Host', '127.0.0.1')
      .type('form')
      .send('from=a&from=b');
    expect(notOneField.status).toBe(400);
    expect(notOneField.text).toMatch(/from must be a string of 1 to 255 bytes/);
    const done = await post(`/flows/${flow.flowId}/rerun`, { from: 'a' }).expect(303);
    expect(done.headers.location).toBe(`${BASE}/flows/${flow.flowId}`);
    const graph = await durable.getFlowGraph(flow.flowId);
    const ids = Object.fromEntries(graph.nodes.map((n) => [n.name, n.runId]));
    expect(ids.a).not.toBe(flow.runIds.a);
    expect(ids.b).not.toBe(flow.runIds.b);
    expect(ids.c).toBe(flow.runIds.c); // not downstream of a: kept
    expect((await durable.waitForRun(ids.b!, { timeout: 20_000 })).result).toBe(2);
    const [action] = await durable.listActivity({ kinds: ['dashboard_action'] });
    expect(action).toMatchObject({
      runId: ids.a,
      details: { action: 'rerunFlow', workflow: 'dash_node', flowId: flow.flowId, from: 'a', actor: 'ops@example.com' },
    });
    expect(action.details.runIds).toEqual({ a: ids.a, b: ids.b });

    // a node with a dependant still going gets no button, and its rerun answers 409; an unknown flow 404
    const going = await durable.startFlow(
      durable
        .flow()
        .add('a', 'dash_node', 1)
        .add('b', 'dash_article', { title: 't' }, { deps: ['a'] }),
    );
    await durable.waitForRun(going.runIds.a, { timeout: 20_000 });
    await waitFor(async () => (await durable.getRun(going.runIds.b))?.waitingFor?.kind === 'input', { timeout: 20_000 });
    expect((await request(t.server).get(`${BASE}/flows/${going.flowId}`).expect(200)).text).not.toContain('Rerun from here');
    expect((await post(`/flows/${going.flowId}/rerun`, { from: 'a' })).status).toBe(409);
    expect((await post('/flows/no-such-flow/rerun', { from: 'a' })).status).toBe(404);
    expect((await durable.getFlowGraph(going.flowId)).nodes.map((n) => n.runId)).toEqual([going.runIds.a, going.runIds.b]);
  });

  it('forRootAsync: options from a factory, mounted at its path', async () => {
    const t = await createApp({
      workflows: [Node],
      providers: [NeedsUser],
      options: { worker: false },
      imports: [DurableDashboardModule.forRootAsync({ path: 'ops/durable', useFactory: async () => ({ guards: [NeedsUser], readOnly: false }) })],
      http: (app: INestApplication) => app.setGlobalPrefix('api'),
    });
    const run = (await t.durable.start('dash_node', 1, { runAt: new Date(Date.now() + 3_600_000) })).runId;
    expect((await request(t.server).get('/api/ops/durable/')).status).toBe(403);
    const page = await request(t.server).get(`/api/ops/durable/runs/${run}`).set('x-user', 'ada').expect(200);
    expect(page.text).toContain(`action="/api/ops/durable/runs/${run}/cancel"`);
    await request(t.server).post(`/api/ops/durable/runs/${run}/cancel`).set('x-user', 'ada').set('Sec-Fetch-Site', 'same-origin').expect(303);
    expect((await t.durable.getRun(run))?.status).toBe('cancelled');
  });

  it('a misspelt option of forRoot, forRootAsync or its factory is refused by name', async () => {
    expect(() => DurableDashboardModule.forRoot({ readonly: false } as never)).toThrow(/unknown option "readonly" \(did you mean "readOnly"\?\)/);
    expect(() => DurableDashboardModule.forRootAsync({ useFactory: () => ({}), injects: [] } as never)).toThrow(
      /unknown option "injects" \(did you mean "inject"\?\)/,
    );
    const factory = DurableDashboardModule.forRootAsync({ useFactory: () => ({ gaurds: [] }) as never });
    await expect(createApp({ workflows: [Node], options: { worker: false }, imports: [factory] })).rejects.toThrow(
      /unknown option "gaurds" \(did you mean "guards"\?\)/,
    );
    // durations no timer can wait are refused at startup (they would fire at once)
    await expect(dashboardApp({ statementTimeout: '30d' })).rejects.toThrow(/statementTimeout must be at most 2147482647ms/);
    await expect(dashboardApp({ refreshInterval: '30d' })).rejects.toThrow(/refreshInterval must be at most 2147483647ms/);
  });

  it('read-write: a POST from another origin, or without any origin, is refused and changes nothing', async () => {
    const t = await dashboardApp({ readOnly: false });
    const run = (await t.durable.start('dash_node', 1)).runId;
    const cancel = () => request(t.server).post(`${BASE}/runs/${run}/cancel`).set('Host', 'app.example');
    expect((await cancel().set('Origin', 'https://evil.example')).status).toBe(403);
    expect((await cancel().set('Sec-Fetch-Site', 'cross-site')).status).toBe(403);
    expect((await cancel()).status).toBe(403);
    expect((await t.durable.getRun(run))?.status).toBe('pending');
    expect((await cancel().set('Sec-Fetch-Site', 'same-origin')).status).toBe(303);
    expect((await t.durable.getRun(run))?.status).toBe('cancelled');
  });
});
