/**
 * Key tombstones (`retention.keys`) are kept long after the runs' retention, and pruning runs at
 * least once a minute: it must not read the tombstones it keeps, however many there are. It still
 * turns the holders due into tombstones and deletes the other runs due, the tombstones whose key
 * was released and those past the key horizon. Nor does a backlog of runs due (more than a pass
 * prunes) make a statement read more than the batch it prunes.
 */
import { RunContext, Step, Workflow } from '../../src';
import { DurableConnection } from '../../src/core/durable.connection';
import { Maintenance } from '../../src/worker/maintenance';
import { createApp, ident, rowsReadBy, rowsReadEach, sql } from '../support';

@Workflow('tb_never', { reuse: 'never' })
class Never {
  @Step()
  async only(_ctx: RunContext) {
    return 1;
  }
}

it('pruning reads the runs it prunes, not the 20,000 key tombstones it keeps', async () => {
  const t = await createApp({ workflows: [Never], options: { worker: false, retention: { runs: '1d', keys: '365d' } } });
  const S = ident(t.schema);
  const insert = (what: string, rows: number, finished: string, key: boolean, pruned: boolean, holds = key) =>
    sql<{ id: string; what: string }>(
      `INSERT INTO ${S}.runs (id, workflow, status, run_at, finished_at, key, holds_key, pruned_at)
       SELECT gen_random_uuid(), 'tb_never', 'completed', now() - $2::interval, now() - $2::interval - g * interval '1 second',
         CASE WHEN $3 THEN $1 || g END, $5, CASE WHEN $4 THEN now() - interval '1 day' END
       FROM generate_series(1, $6::int) g RETURNING id, $1 AS what`,
      [what, finished, key, pruned, holds, rows],
    );
  await insert('kept', 20_000, '3 days', true, true);
  const due = [
    ...(await insert('holder', 3, '2 days', true, false)), // becomes a tombstone
    ...(await insert('keyless', 2, '2 days', false, false)), // deleted
    ...(await insert('released', 1, '3 days', true, true, false)), // a tombstone whose key was released: deleted
    ...(await insert('past', 1, '400 days', true, true)), // a tombstone past the horizon: deleted
  ];
  await sql(`ANALYZE ${S}.runs`);

  const read = await rowsReadBy(t.get(DurableConnection), 'runs', () => t.get(Maintenance).pruneNow());
  expect(read).toBeLessThan(100);
  const left = await sql<{ id: string; tombstone: boolean }>(`SELECT id, pruned_at IS NOT NULL AS tombstone FROM ${S}.runs WHERE id = ANY($1::uuid[])`, [
    due.map((r) => r.id),
  ]);
  expect(left.sort((a, b) => a.id.localeCompare(b.id))).toEqual(
    due
      .filter((r) => r.what === 'holder')
      .map((r) => ({ id: r.id, tombstone: true }))
      .sort((a, b) => a.id.localeCompare(b.id)),
  );
  expect(await sql(`SELECT count(*)::int AS n FROM ${S}.runs WHERE pruned_at IS NOT NULL`)).toEqual([{ n: 20_003 }]);
});

it('pruning a backlog of finished child runs reads the runs it prunes and their parents, not the whole table at each statement', async () => {
  const t = await createApp({ workflows: [Never], options: { worker: false, retention: { runs: '1d' } } });
  const S = ident(t.schema);
  const [parent] = await sql<{ id: string }>(
    `INSERT INTO ${S}.runs (id, workflow, status, run_at, finished_at) VALUES (gen_random_uuid(), 'tb_never', 'completed', now(), now()) RETURNING id`,
  );
  // a history of 100,000 finished runs, not due
  await sql(`INSERT INTO ${S}.runs (id, workflow, status, run_at, finished_at)
    SELECT gen_random_uuid(), 'tb_never', 'completed', now() - interval '1 hour', now() - interval '1 hour' FROM generate_series(1, 100000)`);
  // due: 6,000 children of the finished parent; kept: a due child of a going parent
  await sql(
    `INSERT INTO ${S}.runs (id, workflow, status, run_at, finished_at, parent_id)
     SELECT gen_random_uuid(), 'tb_never', 'completed', now() - interval '2 days', now() - interval '2 days', $1 FROM generate_series(1, 6000)`,
    [parent.id],
  );
  const [going] = await sql<{ id: string }>(
    `INSERT INTO ${S}.runs (id, workflow, status, run_at) VALUES (gen_random_uuid(), 'tb_never', 'waiting', now()) RETURNING id`,
  );
  const kept = await sql<{ id: string }>(
    `INSERT INTO ${S}.runs (id, workflow, status, run_at, finished_at, parent_id)
     VALUES (gen_random_uuid(), 'tb_never', 'completed', now() - interval '2 days', now() - interval '2 days', $1) RETURNING id`,
    [going.id],
  );
  await sql(`ANALYZE ${S}.runs`);

  const read = await rowsReadBy(t.get(DurableConnection), 'runs', () => t.get(Maintenance).pruneNow());
  // each due run and its parent, a few times (candidates, delete): not the 106,000 rows at each statement
  expect(read).toBeLessThan(60_000);
  expect(await sql(`SELECT count(*)::int AS n FROM ${S}.runs WHERE finished_at < now() - interval '1 day'`)).toEqual([{ n: 1 }]);
  expect(await sql(`SELECT id FROM ${S}.runs WHERE id = $1`, [kept[0].id])).toEqual(kept);
});

it('with a backlog of 30,000 runs due, no prune statement reads more than the batch it prunes (and the runs it writes)', async () => {
  const t = await createApp({ workflows: [Never], options: { worker: false, retention: { runs: '1d', keys: '365d' } } });
  const S = ident(t.schema);
  // due: 30,000 runs without a key, deleted; 3 holders, made tombstones; a tombstone whose key was
  // released and one past the horizon, deleted; kept: 2 tombstones
  const inserted = await sql<{ key: string | null; holds_key: boolean; pruned: boolean }>(`
    INSERT INTO ${S}.runs (id, workflow, status, run_at, finished_at, key, holds_key, pruned_at)
    SELECT gen_random_uuid(), 'tb_never', 'completed', now() - interval '3 days', now() - interval '2 days' - g * interval '1 second', NULL, false, NULL
    FROM generate_series(1, 30000) g
    UNION ALL
    SELECT gen_random_uuid(), 'tb_never', 'completed', now() - interval '3 days', now() - f * interval '1 day', k || g, h, CASE WHEN p THEN now() END
    FROM (VALUES ('holder', 2, true, false, 3), ('released', 3, false, true, 1), ('past', 400, true, true, 1), ('kept', 3, true, true, 2)) AS v (k, f, h, p, n),
      generate_series(1, n) g
    RETURNING key, holds_key, pruned_at IS NOT NULL AS pruned`);
  expect(inserted).toHaveLength(30_007);
  await sql(`ANALYZE ${S}.runs`);

  const each = await rowsReadEach(t.get(DurableConnection), 'runs', () => t.get(Maintenance).pruneNow());
  // each statement reads the runs of its batch (5,000), then each by id and writes it (the write
  // counted too): not the 30,000 due
  expect(Math.max(...each)).toBeLessThanOrEqual(3 * 5_000 + 100);
  expect(await sql(`SELECT key, pruned_at IS NOT NULL AS tombstone FROM ${S}.runs ORDER BY key`)).toEqual(
    ['holder1', 'holder2', 'holder3', 'kept1', 'kept2'].map((key) => ({ key, tombstone: true })),
  );
});
