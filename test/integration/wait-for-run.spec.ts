/**
 * waitForRun looks at the run's status alone while it waits, less and less often for a run that
 * takes long, and reads the whole run (its children, its input) once, when it has finished.
 */
import { RunNotFoundError, TimeoutError } from '../../src';
import { RunsStore } from '../../src/store/runs.store';
import { createApp, freshSchema, ident, sql, waitFor } from '../support';

/** A running parent of `children` child runs, written directly (no worker runs them). */
async function parentOf(schema: string, children: number): Promise<string> {
  const S = ident(schema);
  const [{ id }] = await sql<{ id: string }>(
    `INSERT INTO ${S}.runs (id, workflow, status, node_id, epoch, attempt, started_at, input)
     VALUES (gen_random_uuid(), 'wfr_parent', 'running', 'elsewhere', 1, 1, now(), '{"big": true}') RETURNING id`,
  );
  await sql(
    `INSERT INTO ${S}.runs (id, workflow, parent_id, run_at) SELECT gen_random_uuid(), 'wfr_child', $1, now() + interval '1 day' FROM generate_series(1, $2)`,
    [id, children],
  );
  return id;
}

describe('waitForRun', () => {
  it("reads a parent's 20,000 children once, when it has finished, not at each look", async () => {
    const schema = freshSchema();
    const t = await createApp({ schema, options: { worker: false } });
    const id = await parentOf(schema, 20_000);
    const store = t.get(RunsStore);
    const whole = jest.spyOn(store, 'get');
    const looks = jest.spyOn(store, 'status');
    const waited = t.durable.waitForRun(id, { timeout: '30s' });
    // it looks a few times while the parent runs
    await waitFor(() => looks.mock.calls.length >= 5, { timeout: 10_000, message: 'five looks' });
    expect(whole).not.toHaveBeenCalled();
    await sql(`UPDATE ${ident(schema)}.runs SET status = 'completed', finished_at = now(), node_id = NULL WHERE id = $1`, [id]);
    const run = await waited;
    expect(run.status).toBe('completed');
    expect(run.children).toHaveLength(20_000);
    expect(whole).toHaveBeenCalledTimes(1);
  });

  it('looks less and less often at a run that takes long: about 50 looks in 3 s, not 120', async () => {
    const schema = freshSchema();
    const t = await createApp({ schema, options: { worker: false } });
    const id = await parentOf(schema, 0);
    const looks = jest.spyOn(t.get(RunsStore), 'status');
    await expect(t.durable.waitForRun(id, { timeout: '3s' })).rejects.toBeInstanceOf(TimeoutError);
    // every 25 ms for the first second (~40), then 50, 100, 200 and 250 ms apart (~10 in 2 s)
    expect(looks.mock.calls.length).toBeGreaterThan(10);
    expect(looks.mock.calls.length).toBeLessThan(80);
  });

  it('a run that does not exist, or is deleted while it is waited for, is RunNotFoundError', async () => {
    const schema = freshSchema();
    const t = await createApp({ schema, options: { worker: false } });
    await expect(t.durable.waitForRun('01a24f44-a669-7605-be1f-a34716ede7b8')).rejects.toBeInstanceOf(RunNotFoundError);
    await expect(t.durable.waitForRun('not-a-uuid')).rejects.toBeInstanceOf(RunNotFoundError);
    const id = await parentOf(schema, 0);
    const looks = jest.spyOn(t.get(RunsStore), 'status');
    const waited = t.durable.waitForRun(id, { timeout: '30s' });
    await waitFor(() => looks.mock.calls.length >= 2, { timeout: 10_000, message: 'two looks' });
    await sql(`DELETE FROM ${ident(schema)}.runs WHERE id = $1`, [id]);
    await expect(waited).rejects.toBeInstanceOf(RunNotFoundError);
  });
});
