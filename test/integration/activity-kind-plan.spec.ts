/**
 * `listActivity({ kinds })` of a kind other than `key_duplicate` reads that kind's records through
 * `activity_kind`, not the whole log newest first: a log of many duplicates and a few rarer
 * records older than them; and the index's migration goes up and down.
 */
import { DurableConnection } from '../../src/core/durable.connection';
import { createApp, ident, migrationRoundTrip, sql, valueAndRowsRead } from '../support';

describe('listActivity({ kinds }) over a long log', () => {
  let t: Awaited<ReturnType<typeof createApp>>;
  /** Rows of `activity` each statement of `listActivity(filter)` read, and the ids it returned. */
  const listed = async (filter: Parameters<typeof t.durable.listActivity>[0]) => {
    const { value, read } = await valueAndRowsRead(t.get(DurableConnection), 'activity', () => t.durable.listActivity(filter));
    return { ids: value.map((e) => e.id), read };
  };
  /** The ids of the records of `kind`, newest first (optionally of one workflow). */
  const idsOf = async (kind: string, workflow?: string) =>
    (
      await sql<{ id: string }>(
        `SELECT id::text FROM ${ident(t.schema)}.activity WHERE kind = $1 AND ($2::text IS NULL OR workflow = $2) ORDER BY at DESC, id DESC`,
        [kind, workflow ?? null],
      )
    ).map((r) => r.id);

  beforeAll(async () => {
    t = await createApp({ workflows: [] });
    const S = ident(t.schema);
    const record = (kind: string, workflow: string, n: number, minutesAgo: number) =>
      sql(
        `INSERT INTO ${S}.activity (kind, workflow, key, at, details)
         SELECT $1, $2, 'k' || i, now() - make_interval(mins => $4::int) - i * interval '1 millisecond', '{}'::jsonb FROM generate_series(1, $3::int) i`,
        [kind, workflow, n, minutesAgo],
      );
    // the rarer kinds first (older), then 20,000 duplicates newer than all of them
    await record('key_released', 'a_wf', 6, 90);
    await record('key_released', 'b_wf', 4, 80);
    await record('dashboard_action', 'a_wf', 3, 70);
    await record('key_duplicate', 'a_wf', 20_000, 10);
    await sql(`ANALYZE ${S}.activity`);
  });

  it('a rare kind, alone or with a workflow, reads its records, not the duplicates newer than them', async () => {
    const released = await listed({ kinds: ['key_released'] });
    expect(released.ids).toEqual(await idsOf('key_released'));
    expect(released.read[0]).toBeLessThan(50);

    const inB = await listed({ kinds: ['key_released'], workflow: 'b_wf' });
    expect(inB.ids).toEqual(await idsOf('key_released', 'b_wf'));
    expect(inB.read[0]).toBeLessThan(50);

    const page = await listed({ kinds: ['key_released'], limit: 3 });
    const next = await listed({ kinds: ['key_released'], limit: 3, cursor: page.ids[2] });
    expect([...page.ids, ...next.ids]).toEqual((await idsOf('key_released')).slice(0, 6));
    expect(next.read[0]).toBeLessThan(50);

    const two = await listed({ kinds: ['key_released', 'dashboard_action'] });
    expect(two.ids).toEqual([...(await idsOf('dashboard_action')), ...(await idsOf('key_released'))]);
    expect(two.read[0]).toBeLessThan(50);
  });

  it('duplicates, the bulk of the log, are read newest first as before', async () => {
    const dup = await listed({ kinds: ['key_duplicate'], limit: 10 });
    expect(dup.ids).toEqual((await idsOf('key_duplicate')).slice(0, 10));
    expect(dup.read[0]).toBeLessThan(50);
  });
});

it('its index: DurableActivityKindIndex goes up, down and up again', async () => {
  const { before, up, down, again, twice } = await migrationRoundTrip('DurableActivityKindIndex', 'activity');
  expect(before.has('activity_kind')).toBe(false);
  expect([...up.keys()].filter((name) => !before.has(name))).toEqual(['activity_kind']);
  expect(up.get('activity_kind')).toMatch(/\(kind, at, id\) WHERE \(kind <> 'key_duplicate'::text\)$/);
  expect(down).toEqual(before);
  expect(again).toEqual(up);
  expect(twice).toEqual(up);
});
