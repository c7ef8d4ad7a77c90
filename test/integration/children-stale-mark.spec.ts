/**
 * A child that ends while its parent's step runs marks the parent's inbox (`children:`), so the
 * step's suspension on its children resumes at once. A step that then read its children finished
 * without suspending (an attempt that timed out, its retry finding them done) left that mark: the
 * next step that waited for children of its own ran once more than it needed to.
 */
import { RunContext, Step, Workflow } from '../../src';
import { createApp, freshSchema, ident, sql, waitFor } from '../support';

const bodies = { first: 0, second: 0 };
let schema = '';

@Workflow('csm_quick')
class Quick {
  @Step()
  async go() {
    return 'quick';
  }
}

@Workflow('csm_slow')
class Slow {
  @Step()
  async go(ctx: RunContext) {
    return ctx.waitForEvent('done');
  }
}

@Workflow('csm_parent')
class Parent {
  // the first attempt starts a child and outlives the step's timeout once the child has ended; the
  // retry finds the child ended
  @Step({ timeout: '1s', retry: { attempts: 2, initialDelay: '100ms', jitter: false } })
  async first(ctx: RunContext) {
    bodies.first++;
    const child = ctx.callWorkflow(Quick);
    if (ctx.attempt > 1) return child;
    child.catch(() => undefined);
    await waitFor(async () => (await sql(`SELECT 1 FROM ${ident(schema)}.runs WHERE workflow = 'csm_quick' AND status = 'completed'`)).length > 0);
    await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve));
  }

  @Step()
  async second(ctx: RunContext) {
    bodies.second++;
    return ctx.callWorkflow(Slow);
  }
}

it("a step that read its children ended without suspending leaves no mark: the next step's wait for children runs it twice, not three times", async () => {
  schema = freshSchema();
  const S = ident(schema);
  const t = await createApp({ schema, workflows: [Quick, Slow, Parent] });
  const { runId } = await t.durable.start(Parent);
  const slow = await waitFor(
    async () => (await sql<{ id: string }>(`SELECT id FROM ${S}.runs WHERE workflow = 'csm_slow' AND status = 'waiting' AND wait_name = 'done'`))[0],
  );
  await waitFor(async () => (await t.durable.getRun(runId))?.status === 'waiting', { message: 'the parent waits for its child' });
  expect(await t.durable.sendEvent(slow.id, 'done', 'slow')).toBe('delivered');
  expect(await t.durable.waitForRun(runId, { timeout: 30_000 })).toMatchObject({ status: 'completed', result: 'slow' });
  // first: the attempt that timed out and its retry; second: its suspension and its resume
  expect(bodies).toEqual({ first: 2, second: 2 });
});

const later = { first: 0, second: 0 };
let child = '';
let sender: { sendEvent(runId: string, name: string, payload: unknown): Promise<unknown> } | undefined;

@Workflow('csm_gated')
class Gated {
  @Step()
  async go(ctx: RunContext) {
    return ctx.waitForEvent('go');
  }
}

@Workflow('csm_late_parent')
class LateParent {
  // the first attempt starts a child and outlives the step's timeout; the child ends while the
  // retry runs, after its claim and before it reads the child
  @Step({ timeout: '1s', retry: { attempts: 2, initialDelay: '100ms', jitter: false } })
  async first(ctx: RunContext) {
    later.first++;
    if (ctx.attempt > 1) {
      await sender!.sendEvent(child, 'go', 'gated');
      await waitFor(async () => (await sql(`SELECT 1 FROM ${ident(schema)}.runs WHERE id = $1 AND status = 'completed'`, [child])).length > 0);
      return ctx.callWorkflow(Gated);
    }
    ctx.callWorkflow(Gated).catch(() => undefined);
    await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve));
  }

  @Step()
  async second(ctx: RunContext) {
    later.second++;
    return ctx.callWorkflow(Slow);
  }
}

it("a child that ended while its parent's step ran, read by that step without suspending, leaves no mark for the next step's wait", async () => {
  schema = freshSchema();
  const S = ident(schema);
  const t = await createApp({ schema, workflows: [Gated, Slow, LateParent] });
  sender = t.durable;
  const { runId } = await t.durable.start(LateParent);
  child = (
    await waitFor(async () => (await sql<{ id: string }>(`SELECT id FROM ${S}.runs WHERE workflow = 'csm_gated' AND status = 'waiting'`))[0], {
      message: 'the child waits for its event',
    })
  ).id;
  const slow = await waitFor(
    async () => (await sql<{ id: string }>(`SELECT id FROM ${S}.runs WHERE workflow = 'csm_slow' AND status = 'waiting' AND wait_name = 'done'`))[0],
    { timeout: 30_000 },
  );
  await waitFor(async () => (await t.durable.getRun(runId))?.status === 'waiting', { message: 'the parent waits for its child' });
  expect(await t.durable.sendEvent(slow.id, 'done', 'slow')).toBe('delivered');
  expect(await t.durable.waitForRun(runId, { timeout: 30_000 })).toMatchObject({ status: 'completed', result: 'slow' });
  // first: the attempt that timed out and its retry; second: its suspension and its resume
  expect(later).toEqual({ first: 2, second: 2 });
});
