import { RunContext, Step, Workflow } from '../../src';
import { createApp, ident, sql, TestApp } from '../support';
import { cli } from '../support/cli';

@Workflow('cli_keys_pager')
class CliKeysPager {
  @Step()
  async only(ctx: RunContext) {
    return ctx.input;
  }
}

/** The keys a `keys list` table lists, in its order. */
const listed = (text: string): string[] =>
  text
    .split('\n')
    .filter((l) => l.startsWith('cli_keys_pager '))
    .map((l) => l.split(/\s+/)[1]);

// each page is a CLI command booting the module: slow on a loaded machine
jest.setTimeout(240_000);

describe('nestjs-durable keys list', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createApp({ workflows: [CliKeysPager], options: { worker: false } });
  });

  afterAll(() => t?.close());

  it('a page across workflows that stops short after its windows says how to go on to the older keys', async () => {
    await t.durable.start('cli_keys_pager', 0, { key: 'old' });
    const [{ id }] = await sql<{ id: string }>(`SELECT id::text FROM ${ident(t.schema)}.runs WHERE key = 'old'`);
    // 800 finished runs of one key, newer than 'old' (ids of the next millisecond, in order): a page of
    // 2 keys reads windows of 40 runs, then 20 for the key it lacks, ten at most (220 runs); the
    // next, ten windows of 40 (400 runs, no key); the third reaches 'old'
    const ms = (BigInt(`0x${id.replace(/-/g, '').slice(0, 12)}`) + 1n).toString(16).padStart(12, '0');
    await sql(
      `INSERT INTO ${ident(t.schema)}.runs (id, workflow, key, status, finished_at)
       SELECT ($1 || '70008000' || lpad(to_hex(i), 12, '0'))::uuid, 'cli_keys_pager', 'hot', 'completed', now() FROM generate_series(1, 800) i`,
      [ms],
    );
    const page = async (...more: string[]) => {
      const r = await cli(['keys', 'list', '--schema', t.schema, '--limit', '2', ...more]);
      expect(r).toMatchObject({ code: 0, stderr: '' });
      return { keys: listed(r.stdout), cursor: r.stdout.match(/^older keys: --cursor (\S+)$/m)?.[1] };
    };
    const first = await page();
    expect(first.keys).toEqual(['hot']);
    expect(first.cursor).toBeDefined();
    const second = await page('--cursor', first.cursor!);
    expect(second.keys).toEqual([]);
    expect(second.cursor).toBeDefined();
    expect(await page('--cursor', second.cursor!)).toEqual({ keys: ['old'], cursor: undefined });
    // with a workflow, keys in key order: a full page says where the next one starts
    expect(await page('--workflow', 'cli_keys_pager')).toEqual({ keys: ['hot', 'old'], cursor: 'old' });
    expect(await page('--workflow', 'cli_keys_pager', '--cursor', 'old')).toEqual({ keys: [], cursor: undefined });

    // --json gives the page's keys and next, the cursor to go on with (null: no older keys), also on an empty page
    const json = async (...more: string[]) => {
      const r = await cli(['keys', 'list', '--schema', t.schema, '--limit', '2', '--json', ...more]);
      expect(r).toMatchObject({ code: 0, stderr: '' });
      const { keys, next } = JSON.parse(r.stdout) as { keys: { key: string; cursor: string }[]; next: string | null };
      return { keys: keys.map((k) => k.key), next, last: keys.at(-1)?.cursor };
    };
    const one = await json();
    expect(one).toEqual({ keys: ['hot'], next: first.cursor, last: first.cursor });
    const two = await json('--cursor', one.next!);
    expect(two).toEqual({ keys: [], next: second.cursor, last: undefined });
    expect(await json('--cursor', two.next!)).toEqual({ keys: ['old'], next: null, last: expect.any(String) });
    expect(await json('--workflow', 'cli_keys_pager')).toEqual({ keys: ['hot', 'old'], next: 'old', last: 'old' });
  });
});
