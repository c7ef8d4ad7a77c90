/**
 * The health indicator's `maxLag` measures the due runs no node claims. The runs of a paused
 * workflow are held on purpose (`pause` stops every node claiming them until a resume), so a pause
 * longer than `maxLag` must not turn every node down — an orchestrator would restart them all, and
 * the restarted nodes would be down again, since the pause outlives restarts.
 */
import { Client } from 'pg';
import { DurableHealthIndicator, Step, Workflow } from '../../src';
import { RunsStore } from '../../src/store/runs.store';
import { createApp, databaseUrl, explainingQueryable, ident, sql } from '../support';

@Workflow('health_paused')
class HealthPaused {
  @Step()
  async only() {
    return 'done';
  }
}

/** The health check's database read may take long on a loaded machine. */
const PATIENT = { maxLag: '5m', timeout: '20s' };

describe('DurableHealthIndicator and paused workflows', () => {
  it("does not count a paused workflow's pending runs in the backlog; other due runs still turn it down", async () => {
    const t = await createApp({ workflows: [HealthPaused] });
    const health = t.get(DurableHealthIndicator);
    await t.durable.pause(HealthPaused);
    const { runId } = await t.durable.start(HealthPaused, {});
    // paused for ten minutes: the run has been due (and held) all that time
    await sql(`update ${ident(t.schema)}.runs set run_at = now() - interval '10 minutes' where id = $1`, [runId]);
    expect((await t.durable.getRun(runId))?.status).toBe('pending');

    expect((await health.isHealthy('durable', PATIENT)).durable).toMatchObject({ status: 'up', pending: 0, lagMs: 0 });

    // a due run of a workflow that is not paused, waiting as long, is still a backlog
    await sql(
      `insert into ${ident(t.schema)}.runs (id, workflow, status, run_at) values (gen_random_uuid(), 'nobody_runs_this', 'pending', now() - interval '10 minutes')`,
    );
    const lagging = (await health.isHealthy('durable', PATIENT)).durable;
    expect(lagging).toMatchObject({ status: 'down', pending: 1, reason: expect.stringMatching(/maxLag/) });
    await sql(`delete from ${ident(t.schema)}.runs where workflow = 'nobody_runs_this'`);

    // resumed: the held run is claimed and completes
    await t.durable.resume(HealthPaused);
    expect(await t.durable.waitForRun(runId, { timeout: '30s' })).toMatchObject({ status: 'completed', result: 'done' });
    expect((await health.isHealthy('durable', PATIENT)).durable).toMatchObject({ status: 'up', pending: 0 });
  });

  it("counts a held run's wait from the resume, not from its run_at; a workflow never paused still from its run_at", async () => {
    // no worker: the held runs stay pending after the resume, as they do while the nodes work a big held backlog off
    const t = await createApp({ workflows: [HealthPaused], options: { worker: false } });
    const health = t.get(DurableHealthIndicator);
    const S = ident(t.schema);
    await t.durable.pause(HealthPaused);
    const held: string[] = [];
    for (let i = 0; i < 3; i++) held.push((await t.durable.start(HealthPaused, {})).runId);
    // a long pause: the held runs have been due for an hour
    await sql(`update ${S}.runs set run_at = now() - interval '1 hour' where workflow = 'health_paused'`);
    await t.durable.resume(HealthPaused);

    // held on purpose, they became claimable at the resume: their wait counts from it
    const resumed = (await health.isHealthy('durable', PATIENT)).durable;
    const [{ since }] = await sql<{ since: number }>(
      `select (extract(epoch from now() - updated_at) * 1000)::float8 as since from ${S}.workflow_controls where workflow = 'health_paused'`,
    );
    expect(resumed).toMatchObject({ status: 'up', pending: 3 });
    expect(resumed.lagMs).toBeGreaterThanOrEqual(0);
    expect(resumed.lagMs).toBeLessThanOrEqual(Math.ceil(since) + 1);
    for (const id of held) expect((await t.durable.getRun(id))?.status).toBe('pending');

    // a due run of a workflow never paused, as old: its wait counts from its run_at
    await sql(`insert into ${S}.runs (id, workflow, status, run_at) values (gen_random_uuid(), 'nobody_runs_this', 'pending', now() - interval '10 minutes')`);
    const lagging = (await health.isHealthy('durable', PATIENT)).durable;
    expect(lagging).toMatchObject({ status: 'down', pending: 4, reason: expect.stringMatching(/maxLag/) });
    expect(lagging.lagMs).toBeGreaterThanOrEqual(600_000);
    expect(lagging.lagMs).toBeLessThan(3_600_000);
    await sql(`delete from ${S}.runs where workflow = 'nobody_runs_this'`);

    // resumed twenty minutes ago and still not worked off: a resume of the workflow, not paused, hides nothing
    await sql(`update ${S}.workflow_controls set updated_at = now() - interval '20 minutes' where workflow = 'health_paused'`);
    await t.durable.resume(HealthPaused);
    const still = (await health.isHealthy('durable', PATIENT)).durable;
    expect(still).toMatchObject({ status: 'down', pending: 3 });
    expect(still.lagMs).toBeGreaterThanOrEqual(1_200_000);
    expect(still.lagMs).toBeLessThan(3_600_000);
  });

  it("reads none of a paused workflow's held runs: the backlog read reads the due runs it counts", async () => {
    const t = await createApp({ workflows: [HealthPaused] });
    const S = ident(t.schema);
    await t.durable.pause(HealthPaused);
    // a long pause: 20,000 runs held, beside a few due runs of a workflow that is not paused and one not yet due
    await sql(
      `insert into ${S}.runs (id, workflow, status, run_at) select gen_random_uuid(), 'health_paused', 'pending', now() - g * interval '1 second' from generate_series(1, 20000) g`,
    );
    await sql(
      `insert into ${S}.runs (id, workflow, status, run_at) select gen_random_uuid(), 'nobody_runs_this', 'pending', now() - interval '10 minutes' from generate_series(1, 3)`,
    );
    await sql(`insert into ${S}.runs (id, workflow, status, run_at) values (gen_random_uuid(), 'nobody_runs_this', 'pending', now() + interval '1 hour')`);
    await sql(`analyze ${S}.runs`);

    // every statement the store's backlog read sends, run (its rows returned) and explained
    const client = new Client({ connectionString: databaseUrl() });
    await client.connect();
    let read = 0;
    const explaining = explainingQueryable(client, 'runs', (rows) => (read += rows));
    try {
      const backlog = await t.get(RunsStore).backlog(explaining);
      expect(backlog.pending).toBe(3);
      expect(read).toBeLessThan(100);
    } finally {
      await client.end();
    }

    const checked = (await t.get(DurableHealthIndicator).isHealthy('durable', PATIENT)).durable;
    expect(checked).toMatchObject({ status: 'down', pending: 3 });
    expect(checked.lagMs).toBeGreaterThanOrEqual(600_000);
    expect(checked.lagMs).toBeLessThan(3_600_000);
  });
});

@Workflow('health_rate', { rateLimit: { limit: 1, period: '1h' } })
class HealthRate {
  @Step()
  async only() {
    return 'done';
  }
}

describe('DurableHealthIndicator and limited workflows', () => {
  it("counts a rate-limited workflow's held runs from its last begin, not from their run_at; nothing begun since, it lags", async () => {
    const t = await createApp({ workflows: [HealthRate] });
    const health = t.get(DurableHealthIndicator);
    const S = ident(t.schema);
    const first = await t.durable.start(HealthRate, {});
    expect(await t.durable.waitForRun(first.runId, { timeout: '30s' })).toMatchObject({ status: 'completed' });
    // held by the window the first run filled, due for ten minutes
    const { runId } = await t.durable.start(HealthRate, {});
    await sql(`update ${S}.runs set run_at = now() - interval '10 minutes' where id = $1`, [runId]);
    // the workflow's row, written when this new worker started, as old as in a cluster up for an hour
    await sql(`update ${S}.workflow_controls set updated_at = now() - interval '1 hour' where workflow = 'health_rate'`);
    const held = (await health.isHealthy('durable', PATIENT)).durable;
    expect(held).toMatchObject({ status: 'up', pending: 1 });
    expect(held.lagMs).toBeLessThan(300_000);
    expect((await t.durable.getRun(runId))?.status).toBe('pending');

    // the last begin ten minutes ago too: nothing began since, the backlog lags
    await sql(`update ${S}.runs set started_at = now() - interval '10 minutes' where id = $1`, [first.runId]);
    const stalled = (await health.isHealthy('durable', PATIENT)).durable;
    expect(stalled).toMatchObject({ status: 'down', pending: 1, reason: expect.stringMatching(/maxLag/) });
    expect(stalled.lagMs).toBeGreaterThanOrEqual(600_000);
  });
});
