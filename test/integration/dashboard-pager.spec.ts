import request from 'supertest';
import { RunContext, Step, Workflow } from '../../src';
import { DurableDashboardModule } from '../../src/dashboard';
import { PAGE_SIZE } from '../../src/dashboard/runs.controller';
import { createApp, TestApp } from '../support';

@Workflow('pager_node')
class PagerNode {
  @Step()
  async only(ctx: RunContext) {
    return ctx.input;
  }
}

/** The href of the pager link `rel` (`prev`: newer, `next`: older) of a page, or undefined. */
function link(html: string, rel: 'prev' | 'next'): string | undefined {
  return html.match(new RegExp(`<a rel="${rel}" href="([^"]*)"`))?.[1].replace(/&amp;/g, '&');
}

/** The run ids a runs page lists, in its order. */
const listed = (html: string): string[] => [...html.matchAll(/<td><a class="mono" href="[^"]*\/runs\/([0-9a-f-]{36})"/g)].map((m) => m[1]);

describe('dashboard runs pager', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createApp({ workflows: [PagerNode], imports: [DurableDashboardModule.forRoot({})], options: { worker: false }, http: () => undefined });
  });

  afterAll(() => t?.close());

  const get = async (path: string) => (await request(t.server).get(path).expect(200)).text;

  it('a page of newer runs that comes back short still links to the older runs, and not to newer ones it does not have', async () => {
    const ids: string[] = [];
    for (let i = 0; i <= PAGE_SIZE; i++) ids.push((await t.durable.start('pager_node', i)).runId);
    const newestFirst = [...ids].sort().reverse(); // the pages' order: by id (runs started in one millisecond may differ from start order)
    const oldest = newestFirst[PAGE_SIZE];

    const first = await get(`/durable/runs?q=${encodeURIComponent('workflow:pager_node status:pending')}`);
    expect(listed(first)).toEqual(newestFirst.slice(0, PAGE_SIZE));
    const second = await get(link(first, 'next')!);
    expect(listed(second)).toEqual([oldest]);

    // a run of the first page leaves the search (no longer pending) before "newer" is followed
    await t.durable.cancel(newestFirst[0]);
    const back = await get(link(second, 'prev')!);
    expect(listed(back)).toEqual(newestFirst.slice(1, PAGE_SIZE));
    expect(link(back, 'prev')).toBeUndefined(); // nothing newer matches
    const older = link(back, 'next');
    expect(older).toBeDefined(); // the oldest run is still one page away
    expect(listed(await get(older!))).toEqual([oldest]);
  });

  it('an empty page of newer runs links to the first page, which starts at the newest run', async () => {
    const newest = (await t.durable.listRuns({ workflow: 'pager_node', limit: 1 }))[0].id;
    const empty = await get(`/durable/runs?q=workflow:pager_node&after=${newest}`);
    expect(listed(empty)).toEqual([]);
    expect(link(empty, 'prev')).toBeUndefined();
    expect(listed(await get(link(empty, 'next')!))[0]).toBe(newest);
  });

  it('an empty cursor is no cursor, as on the keys and activity pages: the first page', async () => {
    const first = await get('/durable/runs?q=workflow:pager_node');
    expect(listed(first)).toHaveLength(PAGE_SIZE);
    for (const cursor of ['before=', 'after=', 'before=&after=']) {
      const page = await get(`/durable/runs?q=workflow:pager_node&${cursor}`);
      expect([cursor, listed(page)]).toEqual([cursor, listed(first)]);
      expect([cursor, link(page, 'prev'), link(page, 'next')]).toEqual([cursor, link(first, 'prev'), link(first, 'next')]);
    }
  });
});
