/**
 * A run no worker began before its workflow timeout ends the same way whoever finds it past its
 * deadline: the timeout sweep, or a worker that claims it late (its workflow paused meanwhile, or
 * the sweep not there yet). Same error (name, code, message, the step it was at) and the same log line.
 */
import { RunContext, Step, Workflow } from '../../src';
import { Maintenance } from '../../src/worker/maintenance';
import { createApp, freshSchema, ident, RecordingLogger, sql, waitFor } from '../support';

@Workflow('nb_timed', { timeout: '1h' })
class Timed {
  @Step()
  async first(_ctx: RunContext) {
    return 1;
  }
}

/** The error fields both paths store, and the error line logged for the run, without its id. */
async function ending(t: Awaited<ReturnType<typeof createApp>>, logger: RecordingLogger, runId: string) {
  const run = await t.durable.getRun(runId);
  const { name, code, message, step } = run!.error as Record<string, unknown>;
  await waitFor(() => logger.find('error', runId).length > 0, { message: 'the run is logged' });
  const lines = logger.find('error', runId);
  return { status: run!.status, error: { name, code, message, step }, log: lines.map((l) => l.message.replace(runId, '<id>')) };
}

it('a run never begun gets the same error and log line from the timeout sweep as from a worker that claims it past its deadline', async () => {
  // the sweep: a node without a worker runs a maintenance pass
  const sweepLogger = new RecordingLogger();
  const schema = freshSchema();
  const S = ident(schema);
  const swept = await createApp({ schema, workflows: [Timed], options: { worker: false }, logger: sweepLogger });
  const a = await swept.durable.start(Timed, {});
  await sql(`UPDATE ${S}.runs SET run_at = now() - interval '2 hours' WHERE id = $1`, [a.runId]);
  await swept.get(Maintenance).pass(false);
  const bySweep = await ending(swept, sweepLogger, a.runId);

  // a late worker: another node holds the maintenance lease for good (this one never sweeps); the
  // run, held by a pause past its deadline, is claimed at the resume
  await sql(`INSERT INTO ${S}.leases (name, holder, process, expires_at) VALUES ('maintenance', 'other', gen_random_uuid(), 'infinity')`);
  const workerLogger = new RecordingLogger();
  const worker = await createApp({ schema, workflows: [Timed], logger: workerLogger });
  await worker.durable.pause(Timed);
  const b = await worker.durable.start(Timed, {});
  await sql(`UPDATE ${S}.runs SET run_at = now() - interval '2 hours' WHERE id = $1`, [b.runId]);
  await worker.durable.resume(Timed);
  await worker.durable.waitForRun(b.runId, { timeout: 15_000 });
  const byWorker = await ending(worker, workerLogger, b.runId);
  // claimed (an attempt counted), not swept
  expect((await worker.durable.getRun(b.runId))!.attempt).toBe(1);
  expect((await swept.durable.getRun(a.runId))!.attempt).toBe(0);

  expect(bySweep).toEqual({
    status: 'failed',
    error: { name: 'TimeoutError', code: 'timeout', message: 'workflow "nb_timed" timed out', step: 'first' },
    log: ['run <id> (nb_timed) step "first" failed for good: TimeoutError: workflow "nb_timed" timed out'],
  });
  expect(byWorker).toEqual(bySweep);
});
