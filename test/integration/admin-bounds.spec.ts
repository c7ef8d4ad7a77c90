import { RunContext, Step, Workflow } from '../../src';
import { createApp, mostValuesRead, sql, waitFor, type TestApp } from '../support';
import { testMeter } from '../support/metrics';

/**
 * What an operator's action on a run reads: its row, not every child id of a parent of many; and
 * what a cancel that cancels many children with it reads to count them. Also a step's
 * `ctx.heartbeat()`, which checks its run's row.
 */

const meter = testMeter();

@Workflow('admin_bounds_node')
class Node {
  @Step()
  async only(ctx: RunContext) {
    return ctx.input;
  }
}

const CHILDREN = 3_000;

/** Opened by the test once the beating run has its children; its step then calls ctx.heartbeat(). */
let openGate: () => void = () => undefined;
const gate = new Promise<void>((resolve) => (openGate = resolve));
/** Settled with the step's ctx.heartbeat(). */
let beaten: (err?: unknown) => void = () => undefined;
const beat = new Promise<void>((resolve, reject) => (beaten = (err) => (err ? reject(err) : resolve())));

@Workflow('admin_bounds_beating')
class Beating {
  @Step()
  async only(ctx: RunContext) {
    await gate;
    await ctx.heartbeat().then(() => beaten(), beaten);
    return null;
  }
}

/**
 * A node without a worker and a parent run of {@link CHILDREN} children: `completed` ones (none is
 * cancelled with the parent), or `pending` ones; the parent itself `pending` (due in an hour) or `completed`.
 */
async function parentOfMany(status: 'pending' | 'completed', children: 'pending' | 'completed' = 'completed'): Promise<{ t: TestApp; parent: string }> {
  const t = await createApp({ workflows: [Node], options: { worker: false } });
  const parent = (await t.durable.start('admin_bounds_node', 7, { key: 'k', runAt: new Date(Date.now() + 3_600_000) })).runId;
  await sql(
    `insert into "${t.schema}".runs (id, workflow, parent_id, status, run_at, finished_at)
     select gen_random_uuid(), 'admin_bounds_node', $1, $2, now() + interval '1 hour', CASE WHEN $2 = 'completed' THEN now() END
     from generate_series(1, ${CHILDREN})`,
    [parent, children],
  );
  await sql(`update "${t.schema}".runs set has_children = true where id = $1`, [parent]);
  if (status === 'completed') await sql(`update "${t.schema}".runs set status = 'completed', finished_at = now() where id = $1`, [parent]);
  expect((await t.durable.getRun(parent))!.children).toHaveLength(CHILDREN); // the public read still gives every child id
  return { t, parent };
}

describe('run admin: what cancel and rerun read', () => {
  it(`cancel of a parent of ${CHILDREN} completed children reads a few values, not every child id`, async () => {
    const { t, parent } = await parentOfMany('pending');
    const most = await mostValuesRead(() => t.durable.cancel(parent, { reason: 'enough' }));
    expect(most).toBeLessThanOrEqual(10);
    expect(await t.durable.getRun(parent)).toMatchObject({ status: 'cancelled' });
  });

  it(`cancel of a parent of ${CHILDREN} unfinished children cancels and counts them all, reading a few values`, async () => {
    const { t, parent } = await parentOfMany('pending', 'pending');
    const counted = () => meter.counter('durable.run.finished', { workflow: 'admin_bounds_node', status: 'cancelled' });
    const before = await counted();
    const most = await mostValuesRead(() => t.durable.cancel(parent));
    expect(most).toBeLessThanOrEqual(10);
    const [{ n }] = await sql<{ n: number }>(`select count(*)::int as n from "${t.schema}".runs where status = 'cancelled'`);
    expect(n).toBe(CHILDREN + 1);
    expect((await counted()) - before).toBe(CHILDREN + 1); // the parent and each child, once
  });

  it(`rerun of a parent of ${CHILDREN} children reads a few values, not every child id`, async () => {
    const { t, parent } = await parentOfMany('completed');
    await t.durable.releaseKey(parent); // so that the rerun may take the key
    let runId = '';
    const most = await mostValuesRead(async () => {
      ({ runId } = await t.durable.rerun(parent));
    });
    expect(most).toBeLessThanOrEqual(10);
    // a fresh copy: same workflow, key and input
    expect(await t.durable.getRun(runId)).toMatchObject({ workflow: 'admin_bounds_node', key: 'k', input: 7, children: [] });
  });

  it(`a step's ctx.heartbeat() in a parent of ${CHILDREN} children reads its row, not every child id`, async () => {
    const t = await createApp({ workflows: [Beating] });
    const { runId } = await t.durable.start('admin_bounds_beating', null);
    await waitFor(async () => (await t.durable.getRun(runId))?.status === 'running');
    await sql(
      `insert into "${t.schema}".runs (id, workflow, parent_id, status, run_at, finished_at)
       select gen_random_uuid(), 'admin_bounds_node', $1, 'completed', now(), now() from generate_series(1, ${CHILDREN})`,
      [runId],
    );
    const most = await mostValuesRead(async () => {
      openGate();
      await beat;
    });
    expect(most).toBeLessThanOrEqual(10);
    await waitFor(async () => (await t.durable.getRun(runId))?.status === 'completed');
  });
});
