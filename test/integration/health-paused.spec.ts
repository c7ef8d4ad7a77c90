/**
 * The health indicator's `maxLag` measures the due runs no node claims. The runs of a paused
 * workflow are held on purpose (`pause` stops every node claiming them until a resume), so a pause
 * longer than `maxLag` must not turn every node down — an orchestrator would restart them all, and
 * the restarted nodes would be down again, since the pause outlives restarts.
 */
import { DurableHealthIndicator, Step, Workflow } from '../../src';
import { createApp, ident, sql } from '../support';

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
});
