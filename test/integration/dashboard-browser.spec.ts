/// <reference lib="dom" />
// page.evaluate / waitForFunction callbacks run in the browser
import { CanActivate, ExecutionContext, Injectable, INestApplication } from '@nestjs/common';
import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Browser, Page } from 'puppeteer-core';
import { RunContext, Step, Workflow } from '../../src';
import { DurableDashboardModule, type DurableDashboardOptions } from '../../src/dashboard';
import { launchBrowser, listen } from '../support/browser';
import { createApp, sql, TestApp, waitFor } from '../support';

@Workflow('browse_article')
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

@Workflow('browse_publish')
class Publish {
  @Step({ retry: { attempts: 2, initialDelay: 1, backoff: 'fixed' } })
  async render(ctx: RunContext<{ fail?: boolean }>) {
    if (ctx.input?.fail) throw new Error('the template is missing');
    return 'rendered';
  }

  @Step()
  async upload() {
    return 'uploaded';
  }
}

/** Lets a request in only with an `x-user` header. */
@Injectable()
class NeedsUser implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    return typeof context.switchToHttp().getRequest<{ headers: Record<string, string> }>().headers['x-user'] === 'string';
  }
}

/** A key and an input that would run script if they were not escaped. */
const HOSTILE_KEY = '<script>window.__pwned="key"</script>';
const HOSTILE_INPUT = { html: '<img src=x onerror="window.__pwned = \'input\'">' };
/** Where the screenshots go: a temporary folder, or `DURABLE_SCREENSHOTS_DIR` (`docs/img` refreshes the docs' pictures). */
const SHOTS = resolve(process.env.DURABLE_SCREENSHOTS_DIR ?? join(tmpdir(), 'nestjs-durable-screenshots'));

let browser: Browser;

beforeAll(async () => {
  browser = await launchBrowser();
  mkdirSync(SHOTS, { recursive: true });
});

afterAll(async () => {
  await browser?.close();
});

async function app(dashboard: DurableDashboardOptions, options: Record<string, unknown> = {}): Promise<{ t: TestApp; origin: string }> {
  const t = await createApp({
    workflows: [Article, Publish],
    providers: [NeedsUser],
    imports: [DurableDashboardModule.forRoot(dashboard)],
    options,
    http: (nest: INestApplication) => nest.setGlobalPrefix('admin'),
  });
  return { t, origin: `${await listen(t)}/admin/durable` };
}

/** A page that records every console error, page error and dialog it meets. */
async function openPage(): Promise<{ page: Page; problems: string[] }> {
  const page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 900 });
  const problems: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`pageerror: ${(e as Error).message}`));
  page.on('dialog', (d) => {
    problems.push(`dialog: ${d.message()}`);
    void d.dismiss();
  });
  return { page, problems };
}

describe('dashboard in a real browser (headless Chromium)', () => {
  it('every page loads without a console error; search key: finds the run; the run page shows the re-add count and the diff; screenshots', async () => {
    const { t, origin } = await app({ readOnly: false, actor: () => 'ada@example.com', refreshInterval: '300ms' });
    const { durable } = t;
    const article = (await durable.start('browse_article', { id: 42, title: 'Durable workflows' }, { key: 'article:42' })).runId;
    await durable.start('browse_article', { id: 42, title: 'Durable workflows, 2nd draft' }, { key: 'article:42' });
    await durable.start('browse_article', { id: 42, title: 'Durable workflows' }, { key: 'article:42' });
    for (let i = 1; i <= 3; i++) await durable.start('browse_publish', { fail: i === 2 }, { key: `article:${i}` });
    const flow = await durable.startFlow(
      durable
        .flow({ name: 'release 1.0' })
        .add('fetch', 'browse_publish', {})
        .add('render', 'browse_publish', {}, { deps: ['fetch'] })
        .add('notes', 'browse_publish', {}, { deps: ['fetch'] })
        .add('ship', 'browse_publish', {}, { deps: ['render', 'notes'] }),
    );
    await durable.schedule('browse_publish', '0 6 * * *', { name: 'nightly_publish', key: 'nightly' });
    await waitFor(async () => (await durable.getRun(article))?.waitingFor?.kind === 'input', { timeout: 30_000 });
    await waitFor(async () => (await durable.getRun(flow.runIds.ship))?.status === 'completed', { timeout: 30_000 });

    const { page, problems } = await openPage();
    // search key: from the runs page's form
    await page.goto(`${origin}/runs`);
    await page.type('form.search-big input[name=q]', 'key:article:42');
    await Promise.all([page.waitForNavigation(), page.click('form.search-big button')]);
    expect(page.url()).toContain('q=key%3Aarticle%3A42');
    const found = await page.$$eval('tbody a.mono', (as) => as.map((a) => a.textContent));
    expect(found).toEqual([article]);
    await page.screenshot({ path: join(SHOTS, 'dashboard-runs.png') });

    // the run page: re-add count and the dropped input as a diff
    await Promise.all([page.waitForNavigation(), page.click('tbody a.mono')]);
    expect(await page.$eval('.readds', (el) => el.textContent?.replace(/\s+/g, ' ').trim())).toBe('added again 2 times');
    expect(
      await page.$eval('ul.diff li', (li) => [
        li.querySelector('code')?.textContent,
        li.querySelector('del')?.textContent,
        li.querySelector('ins')?.textContent,
      ]),
    ).toEqual(['$.title', '"Durable workflows"', '"Durable workflows, 2nd draft"']);
    expect(await page.$('form[action$="/provide-input"] textarea[name=value]')).not.toBeNull();
    await page.screenshot({ path: join(SHOTS, 'dashboard-run.png'), fullPage: true });

    // the live part follows the run without a reload once input is provided
    await durable.provideInput(article, 'approval', 'approved');
    await page.waitForFunction(() => document.querySelector('#run-status .badge')?.textContent === 'completed', { timeout: 30_000 });

    const shots: [string, string][] = [
      ['', 'overview'],
      ['/keys', 'keys'],
      ['/workflows', 'workflows'],
      ['/workflows/browse_article', 'workflow'],
      [`/flows/${flow.flowId}`, 'flow'],
      ['/schedules', 'schedules'],
      ['/activity', 'activity'],
      ['/nodes', 'nodes'],
    ];
    for (const [path, name] of shots) {
      const res = await page.goto(`${origin}${path}`);
      expect([path, res?.status()]).toEqual([path, 200]);
      await page.screenshot({ path: join(SHOTS, `dashboard-${name}.png`), fullPage: name === 'workflow' || name === 'flow' });
      if (name === 'flow') expect(await page.$$eval('svg.flow .node.status-completed', (n) => n.length)).toBe(4);
    }
    expect(problems).toEqual([]);
    await page.close();
  });

  it('a key and an input holding <script> and onerror= are shown as text and run nothing; an unknown qualifier answers 400 with its message', async () => {
    const { t, origin } = await app({}, { worker: false });
    const hostile = (await t.durable.start('browse_article', HOSTILE_INPUT, { key: HOSTILE_KEY })).runId;
    const { page, problems } = await openPage();
    for (const path of [`/runs/${hostile}`, '/runs', '/keys', `/runs?q=${encodeURIComponent(`key:${HOSTILE_KEY}`)}`]) {
      const res = await page.goto(`${origin}${path}`);
      expect([path, res?.status()]).toEqual([path, 200]);
      expect(await page.evaluate(() => (window as { __pwned?: string }).__pwned)).toBeUndefined();
      expect(await page.evaluate(() => document.body.innerText)).toContain(HOSTILE_KEY);
      expect(await page.$('main img')).toBeNull();
    }
    expect(await page.evaluate(() => document.body.innerText)).toContain(hostile);
    const runPage = await page.goto(`${origin}/runs/${hostile}`);
    expect(runPage?.ok()).toBe(true);
    expect(await page.$$eval('pre', (ps) => ps.some((p) => p.textContent?.includes('<img src=x onerror=')))).toBe(true);

    const bad = await page.goto(`${origin}/runs?q=${encodeURIComponent('colour:red')}`);
    expect(bad?.status()).toBe(400);
    expect(await page.$eval('.error', (e) => e.textContent)).toContain('unknown qualifier "colour:"');
    await page.screenshot({ path: join(SHOTS, 'dashboard-search-error.png') });
    // the 400 itself is logged by the browser as a failed resource; nothing else
    expect(problems.filter((p) => !p.includes('400'))).toEqual([]);
    await page.close();
  });

  it('Send event: to a run that does not wait for it, 409 saying why; with "keep it until the run waits for it" ticked, kept and back to the run', async () => {
    const { t, origin } = await app({ readOnly: false, actor: () => 'ada@example.com' }, { worker: false });
    const run = (await t.durable.start('browse_article', { id: 7 }, { runAt: new Date(Date.now() + 3_600_000) })).runId;
    const { page } = await openPage();
    const form = 'form.action[action$="/send-event"]';
    /** Fills the run page's Send event form (the box ticked or not) and posts it: the page it answers. */
    const send = async (keep: boolean) => {
      await page.goto(`${origin}/runs/${run}`);
      await page.type(`${form} input[name=name]`, 'nudge');
      if (keep) await page.click(`${form} input[name=buffer]`);
      const [res] = await Promise.all([page.waitForNavigation(), page.click(`${form} button`)]);
      return { status: res?.status(), url: page.url(), error: await page.$eval('body', (b) => b.querySelector('.error')?.textContent ?? null) };
    };
    expect(await send(false)).toMatchObject({
      status: 409,
      error: `event "nudge" dropped: run ${run} is pending and not waiting for event "nudge"; send it with buffer to keep it until the run waits for it`,
    });
    expect(await send(true)).toEqual({ status: 200, url: `${origin}/runs/${run}`, error: null });
    const records = (await t.durable.listActivity({ runId: run, kinds: ['dashboard_action'] })).map((a) => a.details).reverse();
    expect(records).toMatchObject([
      { action: 'sendEvent', name: 'nudge', outcome: 'dropped', buffer: false },
      { action: 'sendEvent', name: 'nudge', outcome: 'kept', buffer: true },
    ]);
    await page.close();
  });

  it('read-only: POSTs sent from the page answer 403 and change nothing; a guard refuses an anonymous visitor', async () => {
    const { t, origin } = await app({}, { worker: false });
    const run = (await t.durable.start('browse_article', { id: 1 }, { key: 'ro:1' })).runId;
    const { page } = await openPage();
    await page.goto(`${origin}/runs/${run}`);
    expect(await page.$('form.action')).toBeNull(); // no action is offered
    const before = await sql(`select id, status, holds_key, input from "${t.schema}".runs order by id`);
    const statuses = await page.evaluate(
      async (base: string, id: string) => {
        const out: number[] = [];
        for (const action of ['cancel', 'retry', 'rerun', 'release-key', 'provide-input', 'send-event']) {
          const body = new URLSearchParams({ name: 'approval', value: '"x"', payload: '1' });
          out.push((await fetch(`${base}/runs/${id}/${action}`, { method: 'POST', body })).status);
        }
        return out;
      },
      origin,
      run,
    );
    expect(statuses).toEqual([403, 403, 403, 403, 403, 403]);
    expect(await sql(`select id, status, holds_key, input from "${t.schema}".runs order by id`)).toEqual(before);
    expect(await sql(`select 1 from "${t.schema}".activity where kind = 'dashboard_action'`)).toEqual([]);
    await page.close();

    const guarded = await app({ guards: [NeedsUser] }, { worker: false });
    const { page: anonymous } = await openPage();
    expect((await anonymous.goto(`${guarded.origin}/`))?.status()).toBe(403);
    await anonymous.setExtraHTTPHeaders({ 'x-user': 'ada' });
    expect((await anonymous.goto(`${guarded.origin}/`))?.status()).toBe(200);
    await anonymous.close();
  });
});
