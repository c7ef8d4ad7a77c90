import { RunContext, Step, Workflow } from '../../src';
import { Worker } from '../../src/worker/worker';
import { createApp, Gate, ident, sql, waitFor } from '../support';

/**
 * A claim takes what the node has room for, no more: the runs it claimed count against the room as
 * soon as it returns, so the loop that claims again (when a claim filled the room) sees them.
 */

const gate = new Gate();
@Workflow('claim_room')
class Held {
  @Step()
  async hold(ctx: RunContext) {
    await gate.wait(ctx.signal);
  }
}

afterAll(() => gate.open());

it('a node with 4 slots and no prefetch claims 4 of 40 due runs, and the rest stay pending', async () => {
  // a long poll: only the tick below claims
  const t = await createApp({ workflows: [Held], concurrency: 4, options: { worker: { prefetch: 0, pollInterval: '1h' } } });
  const S = ident(t.schema);
  const worker = t.get(Worker);
  // due runs written behind the worker's back (no wake-up), then one claim pass
  await sql(`INSERT INTO ${S}.runs (id, workflow) SELECT gen_random_uuid(), 'claim_room' FROM generate_series(1, 40)`);
  worker.tick();
  await waitFor(() => gate.arrived === 4);
  await waitFor(() => !(worker as unknown as { claiming: boolean }).claiming);
  const counts = await sql<{ status: string; n: number }>(`SELECT status, count(*)::int AS n FROM ${S}.runs GROUP BY status ORDER BY status`);
  expect(counts).toEqual([
    { status: 'pending', n: 36 },
    { status: 'running', n: 4 },
  ]);
  gate.open();
  await waitFor(async () => (await sql(`SELECT 1 FROM ${S}.runs WHERE status <> 'completed'`)).length === 0, { timeout: 20_000 });
});
