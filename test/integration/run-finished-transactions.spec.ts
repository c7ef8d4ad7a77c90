/**
 * `durable.run.finished` for the runs the database cancels along with another, when several such
 * ends share one transaction (a caller's, each call in a savepoint of its own) or are found by the
 * flow maintenance: each cancelled run counted once, none taken again by a later read of the same
 * transaction.
 */
import { DataSource } from 'typeorm';
import { RunContext, Step, Workflow } from '../../src';
import { createApp, databaseUrl, ident, sql, waitFor, type TestApp } from '../support';
import { testMeter } from '../support/metrics';

const { counter } = testMeter();
const finished = (workflow: string, status: string) => counter('durable.run.finished', { workflow, status });

/** A child that waits (for input that never comes). */
@Workflow('rt_hold')
class RtHold {
  @Step()
  async wait(ctx: RunContext) {
    await ctx.waitForInput('never');
  }
}

/** A keyed parent with one waiting child. */
@Workflow('rt_keyed_parent')
class RtKeyedParent {
  @Step()
  async call(ctx: RunContext) {
    return ctx.callWorkflow(RtHold);
  }
}

@Workflow('rt_fail', { retry: { attempts: 1 } })
class RtFail {
  @Step()
  async go() {
    throw new Error('node failed');
  }
}

@Workflow('rt_node')
class RtNode {
  @Step()
  async go() {
    return null;
  }
}

/** A workflow no worker of these specs runs: its runs stay pending. */
@Workflow('rt_idle')
class RtIdle {
  @Step()
  async go() {
    return null;
  }
}

const all = [RtHold, RtKeyedParent, RtFail, RtNode, RtIdle];
const running = ['rt_hold', 'rt_keyed_parent', 'rt_fail', 'rt_node'];

/** Starts a keyed parent under `key` and waits until its child waits. */
async function parentWithChild(t: TestApp, key: string): Promise<{ parent: string; child: string }> {
  const p = await t.durable.start('rt_keyed_parent', {}, { key });
  const [child] = await waitFor(
    async () => {
      const kids = await t.durable.listRuns({ parentId: p.runId });
      return kids.length === 1 && kids[0].status === 'waiting' ? kids : undefined;
    },
    { timeout: 30_000, message: `the child of the parent keyed ${key} waits` },
  );
  return { parent: p.runId, child: child.id };
}

describe('durable.run.finished for cascades in one transaction', () => {
  let ds: DataSource;

  beforeAll(async () => {
    ds = new DataSource({ type: 'postgres', url: databaseUrl() });
    await ds.initialize();
  });

  afterAll(async () => {
    await ds.destroy();
  });

  it("two cancelExisting starts in one caller's transaction count each replaced parent's child once", async () => {
    const t = await createApp({ workflows: all, options: { worker: { workflows: running } } });
    const first = await parentWithChild(t, 'k1');
    const second = await parentWithChild(t, 'k2');
    const before = { child: await finished('rt_hold', 'cancelled'), parent: await finished('rt_keyed_parent', 'cancelled') };
    await ds.transaction(async (manager) => {
      for (const key of ['k1', 'k2']) {
        const r = await t.durable.start('rt_keyed_parent', {}, { key, manager, onDuplicate: 'cancelExisting' });
        expect(r.outcome).toBe('cancelExisting');
      }
    });
    for (const id of [first.parent, first.child, second.parent, second.child]) expect((await t.durable.getRun(id))!.status).toBe('cancelled');
    // counted when the calls returned (inside a caller's transaction)
    expect(await finished('rt_keyed_parent', 'cancelled')).toBe(before.parent + 2);
    expect(await finished('rt_hold', 'cancelled')).toBe(before.child + 2);
  });

  it("an append behind a failed node and a cancelExisting start in one caller's transaction count their cascades once each", async () => {
    const t = await createApp({ workflows: all, options: { worker: { workflows: running } } });
    const start = await finished('rt_node', 'cancelled');
    const { flowId, runIds } = await t.durable.startFlow(
      t.durable
        .flow()
        .add('a', RtFail)
        .add('b', RtNode, {}, { deps: ['a'] }),
    );
    await waitFor(async () => (await t.durable.getRun(runIds.b))?.status === 'cancelled', { timeout: 30_000, message: 'b is cancelled behind the failed a' });
    await waitFor(async () => (await finished('rt_node', 'cancelled')) === start + 1, { timeout: 15_000, message: 'b is counted' });
    const replaced = await parentWithChild(t, 'k');
    const before = { node: await finished('rt_node', 'cancelled'), child: await finished('rt_hold', 'cancelled') };
    await ds.transaction(async (manager) => {
      // x behind the failed a, y behind x: both cancelled by the append
      await t.durable.startFlow((await t.durable.appendFlow(flowId)).add('x', RtNode, {}, { deps: ['a'] }).add('y', RtNode, {}, { deps: ['x'] }), { manager });
      await t.durable.start('rt_keyed_parent', {}, { key: 'k', manager, onDuplicate: 'cancelExisting' });
      // and a second append: the nodes the first cancelled in this transaction are not taken again
      await t.durable.startFlow((await t.durable.appendFlow(flowId)).add('z', RtNode, {}, { deps: ['a'] }), { manager });
    });
    expect((await t.durable.getRun(replaced.child))!.status).toBe('cancelled');
    expect(await finished('rt_node', 'cancelled')).toBe(before.node + 3);
    expect(await finished('rt_hold', 'cancelled')).toBe(before.child + 1);
  });

  it('the flow maintenance counts the nodes it cancels when it resolves an edge missed behind a failed node, once each', async () => {
    const app = await createApp({ workflows: all, options: { worker: false } });
    const S = ident(app.schema);
    const { runIds } = await app.durable.startFlow(
      app.durable
        .flow()
        .add('a', RtIdle)
        .add('b', RtNode, {}, { deps: ['a'] })
        .add('c', RtNode, {}, { deps: ['b'] }),
    );
    // a fails with the flow trigger off: the edge a -> b stays open (a wake-up missed)
    await sql(`alter table ${S}.runs disable trigger runs_flow_deps_trg`);
    await sql(`update ${S}.runs set status = 'failed', finished_at = now() where id = $1`, [runIds.a]);
    await sql(`alter table ${S}.runs enable trigger runs_flow_deps_trg`);
    expect((await app.durable.getRun(runIds.b))!.status).toBe('waiting');
    await app.close();
    const before = await finished('rt_node', 'cancelled');
    const node = await createApp({ workflows: all, schema: app.schema, options: { worker: { workflows: running } } });
    await waitFor(async () => (await node.durable.getRun(runIds.c))?.status === 'cancelled', {
      timeout: 30_000,
      message: 'the flow maintenance cancels b and c',
    });
    expect((await node.durable.getRun(runIds.b))!.status).toBe('cancelled');
    await waitFor(async () => (await finished('rt_node', 'cancelled')) === before + 2, { timeout: 15_000, message: 'b and c are counted' });
  });
});
