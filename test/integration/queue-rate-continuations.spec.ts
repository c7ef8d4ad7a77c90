/**
 * A rate limit counts the runs that begin: a run's own later claims (a retry, a wake-up from a
 * wait) go on at once (queue-controls.spec: runs that have not begun wait for room in the window).
 */
import { RunContext, Step, Workflow } from '../../src';
import { Client } from 'pg';
import { ControlsStore } from '../../src/store/controls.store';
import { createApp, databaseUrl, ident, rowsRead, sql, type PlanNode } from '../support';

const failedOnce = new Set<string>();

@Workflow('rc_retry', { rateLimit: { limit: 1, period: '1h' }, retry: { attempts: 2, initialDelay: 50, backoff: 'fixed', jitter: false } })
class RetriedOnce {
  @Step()
  async work(ctx: RunContext) {
    if (!failedOnce.has(ctx.runId)) {
      failedOnce.add(ctx.runId);
      throw new Error('fails once');
    }
    return ctx.attempt;
  }
}

@Workflow('rc_nap', { rateLimit: { limit: 1, period: '1h', by: 'key' } })
class Napping {
  @Step()
  async nap(ctx: RunContext) {
    await ctx.sleep('100ms');
  }

  @Step()
  async after() {
    return 'woke';
  }
}

describe('rate limit and a run that has begun', () => {
  it('its retry is not held back by its own begin in the window', async () => {
    const t = await createApp({ workflows: [RetriedOnce] });
    const first = await t.durable.start(RetriedOnce);
    expect(await t.durable.waitForRun(first.runId, { timeout: 15_000 })).toMatchObject({ status: 'completed', result: 2 });
  });

  it('its wake-up from a sleep is not held back by its own begin in its group’s window', async () => {
    const t = await createApp({ workflows: [Napping] });
    const { runId } = await t.durable.start(Napping, {}, { key: 'tenant-a' });
    expect(await t.durable.waitForRun(runId, { timeout: 15_000 })).toMatchObject({ status: 'completed', result: 'woke' });
  });
});

it('the limited claim reads the runs that have begun from their own index: neither a group backlog held by a full window nor its history is read', async () => {
  const t = await createApp({ workflows: [], options: { worker: false } });
  const S = ident(t.schema);
  await sql(`INSERT INTO ${S}.nodes (id) VALUES ('n1')`);
  // a history of 20,000 runs of the group, one run begun in the window (full: 1 per hour), 20,000 due
  // runs of the same group that have not begun, one retry due
  await sql(
    `INSERT INTO ${S}.runs (id, workflow, status, group_key, run_at, started_at, finished_at)
     SELECT gen_random_uuid(), 'rc_plan', 'completed', '', now() - interval '1 day', now() - interval '1 day', now() - interval '1 day' FROM generate_series(1, 20000)`,
  );
  await sql(
    `INSERT INTO ${S}.runs (id, workflow, status, group_key, run_at, started_at, finished_at)
     VALUES (gen_random_uuid(), 'rc_plan', 'completed', '', now(), now(), now())`,
  );
  await sql(
    `INSERT INTO ${S}.runs (id, workflow, status, group_key, run_at)
     SELECT gen_random_uuid(), 'rc_plan', 'pending', '', now() - g * interval '1 millisecond' FROM generate_series(1, 20000) g`,
  );
  const [retry] = await sql(
    `INSERT INTO ${S}.runs (id, workflow, status, group_key, run_at, started_at, attempt)
     VALUES (gen_random_uuid(), 'rc_plan', 'pending', '', now(), now() - interval '1 minute', 1) RETURNING id`,
  );
  await sql(`ANALYZE ${S}.runs`);
  const claim = (t.get(ControlsStore) as unknown as { sql: { claim: string } }).sql.claim;
  const client = new Client({ connectionString: databaseUrl() });
  await client.connect();
  try {
    const params = ['n1', 10, 'rc_plan', null, false, 1, 3_600_000, false, 60_000, 1];
    // each in a transaction rolled back: the claim writes the rows it takes
    await client.query('BEGIN');
    const { rows: explained } = await client.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${claim}`, params);
    await client.query('ROLLBACK');
    await client.query('BEGIN');
    const { rows } = await client.query(claim, params);
    await client.query('ROLLBACK');
    // the retry only, through a read that does not grow with the backlog
    expect(rows.map((r: { id: string }) => r.id)).toEqual([retry.id]);
    expect(rowsRead((explained[0]['QUERY PLAN'] as { Plan: PlanNode }[])[0].Plan, 'runs')).toBeLessThan(200);
  } finally {
    await client.end();
  }
});
