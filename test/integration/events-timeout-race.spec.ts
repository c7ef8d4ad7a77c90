import { RunContext, Step, Workflow } from '../../src';
import { countRuns, createApp, freshSchema, sql, ident } from '../support';

/**
 * A wait's timeout and its event at the same moment, for many runs at once (sends from three app
 * instances, two of them workers): each run has exactly one outcome, and the send says which — an
 * event answered 'delivered' (or 'kept' without buffer) is what the wait returned, one answered
 * 'dropped' was not (the wait returned its timeoutValue). With buffer, 'kept' may be either.
 */

const TIMEOUT_MS = 1_000;

@Workflow('etr_wait')
class WaitGo {
  @Step({ retry: { attempts: 1 } })
  async listen(ctx: RunContext<{ i: number }>) {
    return ctx.waitForEvent<{ i: number } | 'timed out'>('go', { timeout: TIMEOUT_MS, timeoutValue: 'timed out' });
  }
}

it('150 runs, each sent its event around the moment its wait times out: the outcome of each send matches what its wait returned', async () => {
  const schema = freshSchema();
  // a node fenced on a loaded machine (the tests' nodeTimeout is 1 s) would cost the runs it claimed
  // ahead their only attempt: not what this test is about
  const timings = { heartbeatInterval: '1s', nodeTimeout: '10s' };
  const apps = [
    await createApp({ schema, workflows: [WaitGo], concurrency: 50, options: timings }),
    await createApp({ schema, workflows: [WaitGo], concurrency: 50, options: timings }),
    await createApp({ schema, workflows: [WaitGo], options: { ...timings, worker: false } }),
  ];
  const { durable } = apps[0];
  const started = await durable.startMany(
    WaitGo,
    Array.from({ length: 150 }, (_, i) => ({ input: { i } })),
  );
  const ids = started.map((r) => (r as { runId: string }).runId);
  // each send is aimed at its wait's end, read from the database, from 150 ms before it to 50 ms after (a send takes some time to land)
  const outcomes = await Promise.all(
    ids.map(async (id, i) => {
      let until: number | undefined;
      for (const deadline = Date.now() + 60_000; until === undefined && Date.now() < deadline;) {
        const [row] = await sql(`SELECT extract(epoch FROM until - clock_timestamp()) * 1000 AS left FROM ${ident(schema)}.waits WHERE run_id = $1`, [id]);
        if (row) until = Date.now() + Number(row.left);
        else await new Promise((r) => setImmediate(r));
      }
      if (until === undefined) throw new Error(`run ${id} never reached its wait`);
      const at = until + (Math.random() * 200 - 150);
      await new Promise((r) => setTimeout(r, Math.max(0, at - Date.now())));
      return apps[i % apps.length].durable.sendEvent(id, 'go', { i }, { buffer: i % 2 === 0 });
    }),
  );
  const runs = await Promise.all(ids.map((id) => durable.waitForRun(id, { timeout: 60_000 })));
  const mismatched = runs.flatMap((run, i) => {
    // with buffer, 'kept' does not tell: kept before the timeout is the answer, after it for a later wait
    if (i % 2 === 0 && outcomes[i] === 'kept') return run.status === 'completed' ? [] : [{ i, outcome: outcomes[i], status: run.status, result: run.result }];
    const answered = outcomes[i] === 'delivered' || outcomes[i] === 'kept';
    const ok = run.status === 'completed' && (answered ? JSON.stringify(run.result) === JSON.stringify({ i }) : run.result === 'timed out');
    return ok ? [] : [{ i, outcome: outcomes[i], status: run.status, result: run.result }];
  });
  expect(mismatched).toEqual([]);
  // both outcomes were seen (the sends did land around the timeout)
  expect(new Set(outcomes).size).toBeGreaterThan(1);
  expect(await countRuns(schema, `status <> 'completed'`)).toBe(0);
}, 180_000);
