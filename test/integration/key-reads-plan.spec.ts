/**
 * Reads of keys over a big history: a page of `listRuns({ key })` reads a page through
 * `runs_key_runs`, however many runs the key has and wherever they are (a key whose runs are older
 * than a long history, a key a third of the runs share; in one workflow or across workflows); a page
 * of `listKeys({ workflow })` reaches its keys without reading their runs; the index's migration.
 */
import { DurableConnection } from '../../src/core/durable.connection';
import { createApp, ident, migrationRoundTrip, sql, valueAndRowsRead } from '../support';

/** Run ids that sort as `i` does. */
const idOf = (i: number) => `00000000-0000-7000-8000-${i.toString(16).padStart(12, '0')}`;
const ids = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, k) => idOf(from + k));
const newestFirst = (list: string[]) => [...list].sort().reverse();

describe('listRuns({ key }) over a big history', () => {
  let t: Awaited<ReturnType<typeof createApp>>;
  /** Rows of `runs` each statement of `listRuns(options)` read, and what it returned. */
  const listed = async (options: Parameters<typeof t.durable.listRuns>[0]) => {
    const { value, read } = await valueAndRowsRead(t.get(DurableConnection), 'runs', () => t.durable.listRuns(options));
    return { runs: value.map((r) => r.id), read };
  };

  beforeAll(async () => {
    t = await createApp({ workflows: [] });
    const S = ident(t.schema);
    const seed = (from: number, to: number, workflow: string, key: string | null, failedEvery = 0) =>
      sql(
        `INSERT INTO ${S}.runs (id, workflow, key, status, finished_at)
         SELECT ('00000000-0000-7000-8000-' || lpad(to_hex(i), 12, '0'))::uuid, $3, $4,
                CASE WHEN $5 > 0 AND i % $5 = 0 THEN 'failed' ELSE 'completed' END, now()
         FROM generate_series($1::int, $2::int) i`,
        [from, to, workflow, key, failedEvery],
      );
    // an old key in two workflows, a key with thousands of runs, then a long history without keys
    // in both workflows: newer than every keyed run, it is what a read in id order would go through
    await seed(1, 30, 'k_a', 'old');
    await seed(31, 50, 'k_b', 'old');
    await seed(100, 5_099, 'k_a', 'hot', 100);
    await seed(5_100, 5_109, 'k_b', 'hot');
    await seed(10_000, 39_999, 'k_a', null);
    await seed(40_000, 44_999, 'k_b', null);
    await sql(`ANALYZE ${S}.runs`);
  });

  it('a page of a key with thousands of runs older than a long history reads that page, in one workflow or across them', async () => {
    const inA = await listed({ key: 'hot', workflow: 'k_a', limit: 10 });
    expect(inA.runs).toEqual(newestFirst(ids(5_090, 5_099)));
    expect(inA.read[0]).toBeLessThanOrEqual(30);

    const all = await listed({ key: 'hot', limit: 10 });
    expect(all.runs).toEqual(newestFirst(ids(5_100, 5_109)));
    expect(all.read[0]).toBeLessThanOrEqual(60);

    const next = await listed({ key: 'hot', limit: 10, cursor: idOf(5_100) });
    expect(next.runs).toEqual(newestFirst(ids(5_090, 5_099)));
    expect(next.read[0]).toBeLessThanOrEqual(60);

    const back = await listed({ key: 'hot', workflow: 'k_a', limit: 5, after: idOf(4_000) });
    expect(back.runs).toEqual(newestFirst(ids(4_001, 4_005)));
    expect(back.read[0]).toBeLessThanOrEqual(30);
  });

  it('the runs of a key older than the whole history are read without reading the history', async () => {
    const old = await listed({ key: 'old' });
    expect(old.runs).toEqual(newestFirst(ids(1, 50)));
    expect(old.read[0]).toBeLessThanOrEqual(200);
    const oldInB = await listed({ key: 'old', workflow: 'k_b', limit: 5 });
    expect(oldInB.runs).toEqual(newestFirst(ids(46, 50)));
    expect(oldInB.read[0]).toBeLessThanOrEqual(20);
  });

  it('with the other filters: a status, a cursor, no match', async () => {
    const failed = await listed({ key: 'hot', status: 'failed', limit: 3 });
    expect(failed.runs).toEqual([idOf(5_000), idOf(4_900), idOf(4_800)]);
    expect((await listed({ key: 'hot', status: ['failed'], cursor: idOf(300) })).runs).toEqual([idOf(200), idOf(100)]);
    expect((await listed({ key: 'nobody' })).runs).toEqual([]);
    expect((await listed({ key: 'old', workflow: 'no_such_workflow' })).runs).toEqual([]);
  });
});

it('a page of a key a third of the runs share reads that page', async () => {
  const t = await createApp({ workflows: [] });
  const S = ident(t.schema);
  await sql(
    `INSERT INTO ${S}.runs (id, workflow, key, status, finished_at)
     SELECT ('00000000-0000-7000-8000-' || lpad(to_hex(i), 12, '0'))::uuid, 'k_dense', CASE WHEN i % 3 = 0 THEN 'tenant-big' END, 'completed', now()
     FROM generate_series(1, 60000) i`,
  );
  await sql(`ANALYZE ${S}.runs`);
  const { value, read } = await valueAndRowsRead(t.get(DurableConnection), 'runs', () =>
    t.durable.listRuns({ workflow: 'k_dense', key: 'tenant-big', limit: 10 }),
  );
  expect(value.map((r) => r.id)).toEqual(Array.from({ length: 10 }, (_, k) => idOf(60_000 - 3 * k)));
  expect(read[0]).toBeLessThanOrEqual(30);
});

it('listKeys({ workflow }): a page reaches its keys one index descent each, without reading their runs (their count alone does)', async () => {
  const t = await createApp({ workflows: [] });
  const S = ident(t.schema);
  // 20 keys of 500 runs each
  await sql(
    `INSERT INTO ${S}.runs (id, workflow, key, status, finished_at)
     SELECT gen_random_uuid(), 'k_many', 'key:' || lpad((i % 20)::text, 2, '0'), 'completed', now() FROM generate_series(1, 10000) i`,
  );
  await sql(`ANALYZE ${S}.runs`);
  const { value: keys, read } = await valueAndRowsRead(t.get(DurableConnection), 'runs', () =>
    t.durable.listKeys({ workflow: 'k_many', limit: 5, cursor: 'key:02' }),
  );
  expect(keys.map((k) => [k.key, k.runs])).toEqual(['key:03', 'key:04', 'key:05', 'key:06', 'key:07'].map((k) => [k, 500]));
  // the runs counted (5 × 500), a descent per key and the holders: not the 2,500 runs read a second time to find the keys
  expect(read[0]).toBeGreaterThanOrEqual(2_500);
  expect(read[0]).toBeLessThan(2_600);
});

it('its index: DurableKeyRunsIndex goes up, down and up again', async () => {
  const { before, up, down, again, twice } = await migrationRoundTrip('DurableKeyRunsIndex', 'runs', 'key IS NOT NULL');
  expect(before.has('runs_key_runs')).toBe(false);
  expect([...up.keys()].filter((name) => !before.has(name))).toEqual(['runs_key_runs']);
  expect(up.get('runs_key_runs')).toMatch(/\(workflow, key, id\) WHERE \(key IS NOT NULL\)$/);
  expect(down).toEqual(before);
  expect(again).toEqual(up);
  expect(twice).toEqual(up);
});
