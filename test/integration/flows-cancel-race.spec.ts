import { Client } from 'pg';
import { OnFlowCancelled, RunContext, RunInfo, Step, Workflow } from '../../src';
import { createApp, databaseUrl, Gate, ident, sql, waitFor } from '../support';

const gate = new Gate();
const hooks: { name: string | null; reason: string }[] = [];

/** Held inside its step until the test opens the gate (or the run is cancelled). */
@Workflow('race_held')
class Held {
  @Step()
  async run(ctx: RunContext) {
    await gate.wait(ctx.signal);
    return ctx.flow!.name;
  }
}

@Workflow('race_echo')
class Echo implements OnFlowCancelled {
  @Step()
  async run(ctx: RunContext) {
    return ctx.flow!.name;
  }

  afterCancelled(reason: 'cancelled' | 'failed' | 'deleted', run: RunInfo) {
    hooks.push({ name: run.name, reason });
  }
}

describe('DAG flows: cascades racing', () => {
  afterAll(() => gate.open());

  it('two deps cancelled at once whose cascades cross (each locks what the other needs next) both end, and so does the flow', async () => {
    const { durable, schema } = await createApp({ workflows: [Held, Echo], concurrency: 5 });
    const S = ident(schema);
    // p1 → c1 → f → e, p1 → e, p2 → f: p1's cascade takes c1 and e, then wants f; p2's takes f, then wants e
    const { runIds } = await durable.startFlow(
      durable
        .flow()
        .add('p1', Held)
        .add('p2', Held)
        .add('c1', Echo, {}, { deps: ['p1'] })
        .add('f', Echo, {}, { deps: ['c1', 'p2'] })
        .add('e', Echo, {}, { deps: ['p1', 'f'] }),
    );
    await waitFor(() => gate.arrived === 2, { message: 'p1 and p2 running' });
    // hold p1's cascade between its two levels: a second connection holds the edge c1 → f
    const holder = new Client({ connectionString: databaseUrl() });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query(`SELECT 1 FROM ${S}.flow_deps WHERE dep_name = 'c1' AND run_id = $1 FOR UPDATE`, [runIds.f]);
      // one after the other, so that the cascades cross whatever the timing: p1's cancel, having
      // cancelled c1 and e, waits for the edge; then p2's, having cancelled f, waits for e
      const blocked = async () =>
        (
          await sql(`SELECT count(*)::int n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND strpos(query, $1) > 0`, [
            `${S}.runs SET status = 'cancelled', cancel_reason`,
          ])
        )[0].n;
      const first = durable.cancel(runIds.p1);
      await waitFor(async () => (await blocked()) === 1, { message: "p1's cancel blocked" });
      const cancels = Promise.allSettled([first, durable.cancel(runIds.p2)]);
      await waitFor(async () => (await blocked()) === 2, { message: 'both cancels blocked' });
      await holder.query('COMMIT');
      const outcomes = await cancels;
      expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'fulfilled']);
    } finally {
      await holder.end();
    }
    const rows = await sql(`SELECT name, status FROM ${S}.runs WHERE flow_id IS NOT NULL ORDER BY name`);
    expect(rows).toEqual(['c1', 'e', 'f', 'p1', 'p2'].map((name) => ({ name, status: 'cancelled' })));
    await waitFor(() => hooks.length === 3, { message: 'three afterCancelled' });
    expect(hooks.map((h) => `${h.name}:${h.reason}`).sort()).toEqual(['c1:cancelled', 'e:cancelled', 'f:cancelled']);
  });
});
