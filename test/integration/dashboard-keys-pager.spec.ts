import request from 'supertest';
import { RunContext, Step, Workflow } from '../../src';
import { DurableDashboardModule } from '../../src/dashboard';
import { createApp, ident, sql, TestApp } from '../support';

@Workflow('keys_pager_node')
class KeysPagerNode {
  @Step()
  async only(ctx: RunContext) {
    return ctx.input;
  }
}

/** The href of the pager link `rel` (`first`: the first page, `next`: older) of a page, or undefined. */
function link(html: string, rel: 'first' | 'next'): string | undefined {
  return html.match(new RegExp(`<a rel="${rel}" href="([^"]*)"`))?.[1].replace(/&amp;/g, '&');
}

/** The keys a keys page lists, in its order. */
const listed = (html: string): string[] => [...html.matchAll(/<td class="mono"><a href="[^"]*">([^<]*)<\/a><\/td>/g)].map((m) => m[1]);

// 22,000 runs written and eight pages read across them: tens of seconds on a loaded machine
jest.setTimeout(180_000);

describe('dashboard keys pager', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createApp({ workflows: [KeysPagerNode], imports: [DurableDashboardModule.forRoot({})], options: { worker: false }, http: () => undefined });
  });

  afterAll(() => t?.close());

  const get = async (path: string) => (await request(t.server).get(path).expect(200)).text;

  it('a page across workflows that stops short (or empty) after its windows links to the older keys, and back to the first page', async () => {
    await t.durable.start('keys_pager_node', 0, { key: 'old' });
    const [{ id }] = await sql<{ id: string }>(`SELECT id::text FROM ${ident(t.schema)}.runs WHERE key = 'old'`);
    // 22,000 finished runs of one key, newer than 'old' (ids of the next millisecond, in order). A page
    // of 50 keys reads windows of 1,000 runs, then 980 for the 49 keys it lacks, ten at most: 9,820
    // runs; the next page finds no key in its ten windows (10,000 runs); the third reaches 'old'
    const ms = (BigInt(`0x${id.replace(/-/g, '').slice(0, 12)}`) + 1n).toString(16).padStart(12, '0');
    await sql(
      `INSERT INTO ${ident(t.schema)}.runs (id, workflow, key, status, finished_at)
       SELECT ($1 || '70008000' || lpad(to_hex(i), 12, '0'))::uuid, 'keys_pager_node', 'hot', 'completed', now() FROM generate_series(1, 22000) i`,
      [ms],
    );

    const first = await get('/durable/keys'); // short, with older keys beyond its windows
    expect(listed(first)).toEqual(['hot']);
    expect(link(first, 'first')).toBeUndefined();
    const second = await get(link(first, 'next')!); // empty, and still older keys beyond
    expect(listed(second)).toEqual([]);
    expect(second).toContain('no key');
    const third = await get(link(second, 'next')!);
    expect(listed(third)).toEqual(['old']);
    expect(link(third, 'next')).toBeUndefined(); // nothing older

    // after following "older", the link back leads to the newest keys, filters kept
    for (const page of [second, third]) {
      expect(link(page, 'first')).toBe('/durable/keys');
      expect(listed(await get(link(page, 'first')!))).toEqual(['hot']);
    }
    const ofWorkflow = await get(`/durable/keys?workflow=keys_pager_node&cursor=hot`);
    expect(listed(ofWorkflow)).toEqual(['old']);
    expect(link(ofWorkflow, 'first')).toBe('/durable/keys?workflow=keys_pager_node');
    expect(link(ofWorkflow, 'next')).toBeUndefined();
  });
});
