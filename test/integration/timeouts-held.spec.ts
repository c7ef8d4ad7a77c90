/**
 * The timeout sweep reads the runs it times out, not the runs a pause holds: a paused workflow's
 * held runs that the maintenance node may not time out (past their first step, of a workflow it
 * does not define: their compensations are unknown there) or that are not past their own timeout
 * yet (never claimed, a timeout longer than this node's workflows') are not read again at every
 * maintenance pass, however many there are. Nor are retried runs past their first step, of a
 * workflow the node does not define, waiting past their timeout for a node that defines it.
 */
import { RunContext, Step, Workflow } from '../../src';
import { DurableConnection } from '../../src/core/durable.connection';
import { Maintenance } from '../../src/worker/maintenance';
import { createApp, ident, migrationRoundTrip, rowsReadBy, sql, type TestApp } from '../support';

@Workflow('held_timed', { timeout: '1h' })
class Timed {
  @Step()
  async only(_ctx: RunContext) {
    return 1;
  }
}

@Workflow('held_two', { timeout: '1h' })
class Two {
  @Step()
  async first(_ctx: RunContext) {
    return 1;
  }

  @Step()
  async second(_ctx: RunContext) {
    return 2;
  }
}

/** One maintenance pass, every statement explained: the rows its scans of `runs` read. */
const rowsReadByPass = (t: TestApp) => rowsReadBy(t.get(DurableConnection), 'runs', () => t.get(Maintenance).pass(true));

it("a maintenance pass reads a bounded number of a paused workflow's held runs it may not time out, and times out the others", async () => {
  const t = await createApp({ workflows: [Timed], options: { worker: false } });
  const S = ident(t.schema);
  await sql(`INSERT INTO ${S}.workflow_controls (workflow, paused) VALUES ('held_elsewhere', true), ('held_long', true)`);
  // 50,000 runs of a workflow this node does not define, past their deadline at their second step
  await sql(`
    INSERT INTO ${S}.runs (id, workflow, status, step, run_at, started_at, timeout_ms, deadline_at, wake_at)
    SELECT gen_random_uuid(), 'held_elsewhere', CASE WHEN g % 2 = 0 THEN 'pending' ELSE 'waiting' END, 1, now() - interval '2 hours',
      now() - interval '2 hours', 3600000, now() - interval '1 hour', CASE WHEN g % 2 = 1 THEN now() - interval '1 hour' END
    FROM generate_series(1, 50000) g`);
  // 30,000 never claimed of a workflow with a 1-day timeout, held for 2 hours (longer than this node's 1-hour timeout)
  await sql(`
    INSERT INTO ${S}.runs (id, workflow, status, run_at, timeout_ms)
    SELECT gen_random_uuid(), 'held_long', 'pending', now() - interval '2 hours', 86400000 FROM generate_series(1, 30000)`);
  // and runs the sweep times out: at their first step past their deadline, of both workflows; never claimed past theirs
  const due = await sql<{ id: string }>(`
    INSERT INTO ${S}.runs (id, workflow, status, step, run_at, started_at, timeout_ms, deadline_at)
    SELECT gen_random_uuid(), w, 'pending', 0, now() - interval '3 hours', now() - interval '3 hours', 3600000, now() - interval '2 hours'
    FROM generate_series(1, 3), unnest(ARRAY['held_elsewhere', 'held_timed']) w
    UNION ALL
    SELECT gen_random_uuid(), w, 'pending', 0, now() - interval '3 hours', NULL, t, NULL
    FROM generate_series(1, 3), (VALUES ('held_timed', 3600000), ('held_long', 7200000)) AS v (w, t)
    RETURNING id`);
  await sql(`ANALYZE ${S}.runs`);

  const first = await rowsReadByPass(t);
  const failed = await sql<{ id: string }>(`SELECT id FROM ${S}.runs WHERE status = 'failed'`);
  expect(failed.map((r) => r.id).sort()).toEqual(due.map((r) => r.id).sort());
  // the held runs stay as they are
  expect(await sql(`SELECT workflow, status, count(*)::int AS n FROM ${S}.runs WHERE finished_at IS NULL GROUP BY 1, 2 ORDER BY 1, 2`)).toEqual([
    { workflow: 'held_elsewhere', status: 'pending', n: 25_000 },
    { workflow: 'held_elsewhere', status: 'waiting', n: 25_000 },
    { workflow: 'held_long', status: 'pending', n: 30_000 },
  ]);
  // none of the held runs it may not time out, only the 12 it times out (each read twice:
  // explained, then run)
  expect(first).toBeLessThan(1_200);
  const next = await rowsReadByPass(t);
  expect(next).toBeLessThan(1_200);
});

it('a first-step run past its deadline, of a workflow the node does not define, is timed out behind more than a batch of held runs with older deadlines', async () => {
  const t = await createApp({ workflows: [Timed], options: { worker: false } });
  const S = ident(t.schema);
  await sql(`INSERT INTO ${S}.workflow_controls (workflow, paused) VALUES ('held_elsewhere', true)`);
  // 20,000 held runs past their second step, their deadline passed 2 hours ago: more than a batch
  await sql(`
    INSERT INTO ${S}.runs (id, workflow, status, step, run_at, started_at, timeout_ms, deadline_at)
    SELECT gen_random_uuid(), 'held_elsewhere', 'pending', 1, now() - interval '3 hours', now() - interval '3 hours', 3600000,
      now() - interval '2 hours' - g * interval '1 millisecond'
    FROM generate_series(1, 20000) g`);
  // 3 at their first step, whose deadline passed later (30 minutes ago): the sweep times them out
  const due = await sql<{ id: string }>(`
    INSERT INTO ${S}.runs (id, workflow, status, step, run_at, started_at, timeout_ms, deadline_at)
    SELECT gen_random_uuid(), 'held_elsewhere', 'pending', 0, now() - interval '90 minutes', now() - interval '90 minutes', 3600000,
      now() - interval '30 minutes'
    FROM generate_series(1, 3) RETURNING id`);
  await sql(`ANALYZE ${S}.runs`);

  for (let pass = 0; pass < 2; pass++) expect(await rowsReadByPass(t)).toBeLessThan(1_200);
  const failed = await sql<{ id: string }>(`SELECT id FROM ${S}.runs WHERE status = 'failed'`);
  expect(failed.map((r) => r.id).sort()).toEqual(due.map((r) => r.id).sort());
  expect(await sql(`SELECT count(*)::int AS n FROM ${S}.runs WHERE status = 'pending' AND step = 1`)).toEqual([{ n: 20_000 }]);
});

it('a maintenance pass reads a bounded number of retried runs past their timeout that it may not time out, and times out the others', async () => {
  const t = await createApp({ workflows: [Timed, Two], options: { worker: false } });
  const S = ident(t.schema);
  // a run that failed at its second step, retried: pending again at that step, its timeout counted
  // again from the retry (no deadline until a claim gives it one)
  const failedAt = (workflow: string, step: number) =>
    sql<{ id: string }>(
      `INSERT INTO ${S}.runs (id, workflow, status, step, attempt, run_at, started_at, finished_at, timeout_ms, deadline_at)
       VALUES (gen_random_uuid(), $1, 'failed', $2, 3, now() - interval '3 hours', now() - interval '3 hours', now() - interval '150 minutes',
         3600000, now() - interval '2 hours') RETURNING id`,
      [workflow, step],
    );
  const [retried] = await failedAt('held_elsewhere', 1);
  await t.durable.retry(retried.id);
  const shape = `SELECT workflow, status, step, attempt, deadline_at, timeout_ms, started_at IS NOT NULL AS started FROM ${S}.runs WHERE id = $1`;
  expect(await sql(shape, [retried.id])).toEqual([
    { workflow: 'held_elsewhere', status: 'pending', step: 1, attempt: 0, deadline_at: null, timeout_ms: 3600000, started: true },
  ]);
  // 20,000 such runs of a workflow this node does not define, retried 2 hours ago (past their 1-hour timeout)
  await sql(`
    INSERT INTO ${S}.runs (id, workflow, status, step, attempt, run_at, started_at, timeout_ms)
    SELECT gen_random_uuid(), 'held_elsewhere', 'pending', 1, 0, now() - interval '2 hours' - g * interval '1 millisecond',
      now() - interval '3 hours', 3600000
    FROM generate_series(1, 20000) g`);
  // the sweep times out retried runs of that workflow at their first step, and of a workflow it
  // defines at any step, past their timeout; not those retried lately
  const due: { id: string }[] = [];
  for (const [workflow, step] of [
    ['held_elsewhere', 0],
    ['held_two', 0],
    ['held_two', 1],
  ] as const) {
    const [run] = await failedAt(workflow, step);
    await t.durable.retry(run.id);
    due.push(run);
  }
  const [recent] = await failedAt('held_two', 1);
  await t.durable.retry(recent.id);
  await sql(`UPDATE ${S}.runs SET run_at = now() - interval '2 hours' WHERE id = ANY($1::uuid[])`, [due.map((r) => r.id)]);
  await sql(`ANALYZE ${S}.runs`);

  for (let pass = 0; pass < 2; pass++) expect(await rowsReadByPass(t)).toBeLessThan(1_200);
  const failed = await sql<{ id: string }>(`SELECT id FROM ${S}.runs WHERE status = 'failed'`);
  expect(failed.map((r) => r.id).sort()).toEqual(due.map((r) => r.id).sort());
  expect(await sql(`SELECT workflow, step, count(*)::int AS n FROM ${S}.runs WHERE status = 'pending' GROUP BY 1, 2 ORDER BY 1, 2`)).toEqual([
    { workflow: 'held_elsewhere', step: 1, n: 20_001 },
    { workflow: 'held_two', step: 1, n: 1 },
  ]);
});

it('its index: DurableTimeoutRetriedIndex goes up, down (the index it replaces back) and up again', async () => {
  const { before, up, down, again, twice } = await migrationRoundTrip('DurableTimeoutRetriedIndex', 'runs', 'deadline_at IS NULL');
  expect([...before.keys()]).toEqual(['runs_timeout_unclaimed_by_timeout']);
  expect([...up.keys()].sort()).toEqual(['runs_timeout_retried', 'runs_timeout_unclaimed_first_step']);
  expect(up.get('runs_timeout_unclaimed_first_step')).toMatch(/\(timeout_ms, run_at\) WHERE .*\(step = 0\)\)?$/);
  expect(up.get('runs_timeout_retried')).toMatch(/\(workflow, timeout_ms, run_at\) WHERE .*\(step > 0\)\)?$/);
  expect(down).toEqual(before);
  expect(again).toEqual(up);
  expect(twice).toEqual(up); // re-runnable: up over an upgraded schema changes nothing
});
