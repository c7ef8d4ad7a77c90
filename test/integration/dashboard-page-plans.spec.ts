/**
 * The statements behind a run's page and a flow's page (`DashboardStore`) read the run's children
 * and the flow's nodes through their indexes (`runs_children`, `runs_flow_node`), not the whole runs
 * table in id order: a big family or flow created after a long history costs its own size.
 */
import type { INestApplication } from '@nestjs/common';
import { Client } from 'pg';
import request from 'supertest';
import { DurableDashboardModule } from '../../src/dashboard';
import { CHILDREN_COUNTED, CHILDREN_SHOWN } from '../../src/dashboard/pages/run.page';
import { DashboardStore } from '../../src/store/dashboard.store';
import { createApp, databaseUrl, explainingQueryable, ident, migrationRoundTrip, sql } from '../support';

/** A UUIDv7-like id, ordered as `n` (ids made later sort after those made before, as the module's). */
const id = (n: string) => `(lpad(to_hex(${n}), 12, '0') || '7000800000000000' || lpad(to_hex((${n}) % 65536), 4, '0'))::uuid`;
const node = (g: number) => `n${String(g).padStart(4, '0')}`;

it("a run's page and a flow's page read the family and the flow, not the history before them", async () => {
  const t = await createApp({ workflows: [], options: { worker: false } });
  const S = ident(t.schema);
  // a history of 200,000 finished runs, then a flow of 5,000 nodes (chains of 10, every 997th still
  // pending) and a parent of 5,000 children, all made after it
  await sql(
    `insert into ${S}.runs (id, workflow, status, run_at, finished_at) select ${id('g')}, 'old', 'completed', now(), now() from generate_series(1, 200000) g`,
  );
  await sql(
    `insert into ${S}.runs (id, workflow, status, run_at, finished_at, flow_id, name, deps)
     select ${id('1000000 + g')}, 'node', CASE WHEN g % 997 = 0 THEN 'pending' ELSE 'completed' END, now(), now(), 'big', 'n' || lpad(g::text, 4, '0'),
       CASE WHEN g % 10 = 0 THEN '{}'::text[] ELSE array['n' || lpad((g - 1)::text, 4, '0')] END
     from generate_series(0, 4999) g`,
  );
  const [{ parent }] = await sql(
    `insert into ${S}.runs (id, workflow, status, run_at) values (${id('2000000')}, 'parent', 'waiting', now()) returning id AS parent`,
  );
  await sql(
    `insert into ${S}.runs (id, workflow, parent_id, status, run_at) select ${id('2000000 + g')}, 'child', $1, 'pending', now() + interval '1 hour' from generate_series(1, 5000) g`,
    [parent],
  );
  await sql(`analyze ${S}.runs`);
  const firstChildren = (await sql(`select id from ${S}.runs where parent_id = $1 order by id limit 50`, [parent])).map((r: { id: string }) => r.id);

  const client = new Client({ connectionString: databaseUrl() });
  await client.connect();
  const read: Record<string, number> = {};
  let statement = '';
  const explaining = explainingQueryable(client, 'runs', (rows) => (read[statement] = (read[statement] ?? 0) + rows));
  try {
    const store = new DashboardStore(t.schema);
    statement = 'run';
    const run = await store.run(explaining, parent, 50, 5001);
    expect([run?.children, run?.child_count]).toEqual([firstChildren, 5000]);
    // looked up by id (a search for it): no child read
    statement = 'run0';
    expect([(await store.run(explaining, parent, 0, 0))?.children, run?.id]).toEqual([[], parent]);
    statement = 'flowNodes';
    expect((await store.flowNodes(explaining, 'big', 201)).map((r) => r.name)).toEqual(Array.from({ length: 201 }, (_, g) => node(g)));
    statement = 'flowCounts';
    expect(await store.flowCounts(explaining, 'big')).toEqual([
      { status: 'pending', n: 6 },
      { status: 'completed', n: 4994 },
    ]);
    statement = 'upstreamGoing';
    // n0000 and n0997 are pending: n0000, and n0990 to n0997 (n0997's chain up to it), are blocked
    const names = Array.from({ length: 1000 }, (_, g) => node(g));
    expect([...(await store.flowUpstream(explaining, 'big', 'going', names))].sort()).toEqual([node(0), ...Array.from({ length: 8 }, (_, i) => node(990 + i))]);
    statement = 'upstreamPruned';
    // n0005 is a key tombstone: it and its chain up to it, n0000 to n0005, cannot be run again
    await sql(`update ${S}.runs set pruned_at = now() where flow_id = 'big' and name = $1`, [node(5)]);
    expect([...(await store.flowUpstream(explaining, 'big', 'pruned', names))].sort()).toEqual(Array.from({ length: 6 }, (_, i) => node(i)));
    // each statement reads at most the family or the flow (5,000 rows) a few times, not the 200,000 runs before them
    expect(read.run0).toBeLessThanOrEqual(1);
    expect(read).toEqual({
      run: expect.any(Number),
      run0: expect.any(Number),
      flowNodes: expect.any(Number),
      flowCounts: expect.any(Number),
      upstreamGoing: expect.any(Number),
      upstreamPruned: expect.any(Number),
    });
    expect(Object.entries(read).filter(([, n]) => n > 15_000)).toEqual([]);
  } finally {
    await client.end();
  }
});

it("a run's page counts its children up to a cap: a parent of 100,000 children costs what the page shows", async () => {
  const t = await createApp({ workflows: [], options: { worker: false } });
  const S = ident(t.schema);
  // a history of 50,000 finished runs, then a parent of 100,000 children made after it
  await sql(
    `insert into ${S}.runs (id, workflow, status, run_at, finished_at) select ${id('g')}, 'old', 'completed', now(), now() from generate_series(1, 50000) g`,
  );
  const [{ parent }] = await sql(
    `insert into ${S}.runs (id, workflow, status, run_at) values (${id('3000000')}, 'parent', 'waiting', now()) returning id AS parent`,
  );
  await sql(
    `insert into ${S}.runs (id, workflow, parent_id, status, run_at) select ${id('3000000 + g')}, 'child', $1, 'pending', now() + interval '1 hour' from generate_series(1, 100000) g`,
    [parent],
  );
  await sql(`analyze ${S}.runs`);
  const firstChildren = (await sql(`select id from ${S}.runs where parent_id = $1 order by id limit 50`, [parent])).map((r: { id: string }) => r.id);

  const client = new Client({ connectionString: databaseUrl() });
  await client.connect();
  let read = 0;
  const explaining = explainingQueryable(client, 'runs', (rows) => (read += rows));
  try {
    const store = new DashboardStore(t.schema);
    const run = await store.run(explaining, parent, 50, 1001);
    // counted up to the cap, the family's first 50 listed
    expect([run?.children, run?.child_count]).toEqual([firstChildren, 1001]);
    expect(read).toBeLessThanOrEqual(1100);
    // a parent of fewer children than the cap is counted whole
    await sql(`update ${S}.runs set parent_id = null where parent_id = $1 and id > $2`, [parent, firstChildren[49]]);
    await sql(`analyze ${S}.runs`);
    read = 0;
    expect((await store.run(explaining, parent, 50, 1001))?.child_count).toBe(50);
    expect((await store.run(explaining, parent, 10, 1001))?.children).toEqual(firstChildren.slice(0, 10));
  } finally {
    await client.end();
  }
});

it("a run's page links its family's first 50 children by id, whatever order they were made in, and reads only what it counts", async () => {
  const t = await createApp({
    workflows: [],
    imports: [DurableDashboardModule.forRoot({})],
    options: { worker: false },
    http: (app: INestApplication) => app.setGlobalPrefix('api'),
  });
  const S = ident(t.schema);
  // a history of 20,000 finished runs, then a parent of 3,000 children made greatest id first: the
  // children made first, first in the table, are the family's last by id
  await sql(
    `insert into ${S}.runs (id, workflow, status, run_at, finished_at) select ${id('g')}, 'old', 'completed', now(), now() from generate_series(1, 20000) g`,
  );
  const [{ parent }] = await sql(
    `insert into ${S}.runs (id, workflow, status, run_at) values (${id('4000000')}, 'parent', 'waiting', now()) returning id AS parent`,
  );
  await sql(
    `insert into ${S}.runs (id, workflow, parent_id, status, run_at) select ${id('4000000 + g')}, 'child', $1, 'pending', now() + interval '1 hour' from generate_series(3000, 1, -1) g`,
    [parent],
  );
  await sql(`analyze ${S}.runs`);
  const firstChildren = (await sql(`select id from ${S}.runs where parent_id = $1 order by id limit $2`, [parent, CHILDREN_SHOWN])).map(
    (r: { id: string }) => r.id,
  );
  expect(firstChildren[0]).toBe((await sql(`select ${id('4000001')}::text AS id`))[0].id);

  // the page links exactly the family's first 50 by id, and says there are more than it counted
  const page = (await request(t.server).get(`/api/durable/runs/${parent}`).expect(200)).text;
  const linked = new Set([...page.matchAll(/href="\/api\/durable\/runs\/([0-9a-f-]{36})"/g)].map((m) => m[1]));
  linked.delete(parent);
  expect([...linked].sort()).toEqual(firstChildren);
  expect(page).toContain(`all ${CHILDREN_COUNTED}+ children →`);

  // and its statement reads the children it counts (one more than the cap) and the run, no more
  const client = new Client({ connectionString: databaseUrl() });
  await client.connect();
  let read = 0;
  const explaining = explainingQueryable(client, 'runs', (rows) => (read += rows));
  try {
    const run = await new DashboardStore(t.schema).run(explaining, parent, CHILDREN_SHOWN, CHILDREN_COUNTED + 1);
    expect([run?.children, run?.child_count]).toEqual([firstChildren, CHILDREN_COUNTED + 1]);
    expect(read).toBeLessThanOrEqual(CHILDREN_COUNTED + 2);
  } finally {
    await client.end();
  }
});

it('its index: DurableChildrenIndex goes up, down (the index it replaces back) and up again', async () => {
  const { before, up, down, again, twice } = await migrationRoundTrip('DurableChildrenIndex', 'runs', 'parent_id');
  expect([...before.keys()]).toEqual(['runs_parent']);
  expect(before.get('runs_parent')).toMatch(/\(parent_id\) WHERE \(parent_id IS NOT NULL\)$/);
  expect([...up.keys()]).toEqual(['runs_children']);
  expect(up.get('runs_children')).toMatch(/\(parent_id, id\) WHERE \(parent_id IS NOT NULL\)$/);
  expect(down).toEqual(before);
  expect(again).toEqual(up);
  expect(twice).toEqual(up); // re-runnable: up over an upgraded schema changes nothing
});
