import { RunContext, Step, Workflow } from '../../src';
import { countRuns, createApp, freshSchema, Gate, sql, ident, waitFor } from '../support';

/**
 * A parent cancelled as its child ends (from another app instance, many at once): every cancel
 * returns (a deadlock between the cancel's cascade and the child's end is decided again), each
 * parent is cancelled, each child ends once (completed or cancelled) and none is left going.
 */

let gate = new Gate();

@Workflow('ccr_child', { retry: { attempts: 1 } })
class Child {
  @Step()
  async work(ctx: RunContext<{ i: number }>) {
    await gate.wait(ctx.signal);
    return ctx.input.i;
  }
}

@Workflow('ccr_parent')
class Parent {
  @Step()
  async call(ctx: RunContext<{ i: number }>) {
    return ctx.callWorkflow(Child, { i: ctx.input.i });
  }

  @Step()
  async after() {
    return 'after';
  }
}

it('40 parents cancelled as their children complete: all cancelled, each child ended once, nothing left going', async () => {
  gate = new Gate();
  const schema = freshSchema();
  const worker = await createApp({ schema, workflows: [Parent, Child], concurrency: 50 });
  const admin = await createApp({ schema, workflows: [Parent, Child], options: { worker: false } });
  const started = await worker.durable.startMany(
    Parent,
    Array.from({ length: 40 }, (_, i) => ({ input: { i } })),
  );
  const ids = started.map((r) => (r as { runId: string }).runId);
  await waitFor(() => gate.arrived >= 40, { timeout: 60_000, message: 'every child is in its step' });
  await waitFor(async () => (await countRuns(schema, `workflow = 'ccr_parent' AND status = 'waiting'`)) === 40, {
    timeout: 60_000,
    message: 'every parent waits for its child',
  });
  gate.open();
  const cancels = await Promise.allSettled(ids.map((id) => admin.durable.cancel(id)));
  expect(cancels.filter((c) => c.status === 'rejected')).toEqual([]);
  await waitFor(async () => (await countRuns(schema, `status IN ('pending', 'running', 'waiting')`)) === 0, {
    timeout: 60_000,
    message: 'nothing is left going',
  });
  const parents = await sql(`SELECT status, count(*)::int AS n FROM ${ident(schema)}.runs WHERE parent_id IS NULL GROUP BY status`);
  // a parent whose child ended first may have woken and completed before its cancel came
  for (const p of parents) expect(['cancelled', 'completed']).toContain(p.status);
  const children = await sql(`SELECT status FROM ${ident(schema)}.runs WHERE parent_id IS NOT NULL`);
  expect(children).toHaveLength(40);
  for (const c of children) expect(['completed', 'cancelled']).toContain(c.status);
}, 180_000);
