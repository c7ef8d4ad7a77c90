import { isSuspension, RunContext, Step, Workflow } from '../../src';
import { createApp, freshSchema, Gate, ident, sql, waitFor } from '../support';

/**
 * A child that ends while its parent waits for a retry of the step that started it (the step's
 * attempt timed out after the child was started): the retried step finds the child (no second one
 * is started) and resumes with its result, whether the child ended during the back-off or after
 * the retried step suspended on it.
 */

let childGate = new Gate();
const attempts: Record<string, number> = {};

@Workflow('cpr_child', { retry: { attempts: 1 } })
class Child {
  @Step()
  async work(ctx: RunContext<{ n: number }>) {
    await childGate.wait(ctx.signal);
    return ctx.input.n * 2;
  }
}

@Workflow('cpr_parent')
class Parent {
  @Step({ timeout: 300, retry: { attempts: 3, initialDelay: '1500ms' } })
  async call(ctx: RunContext<{ n: number }>) {
    attempts[ctx.runId] = (attempts[ctx.runId] ?? 0) + 1;
    try {
      return await ctx.callWorkflow<number>(Child, { n: ctx.input.n });
    } catch (err) {
      // the first attempt holds on past its step timeout: it fails (the child goes on), and is retried
      if (isSuspension(err) && ctx.attempt === 1) await new Promise((r) => setTimeout(r, 1_000));
      throw err;
    }
  }
}

it.each(['during the back-off', 'after the retried step suspended'])('the child ends %s: one child, and the parent completes with its result', async (when) => {
  childGate = new Gate();
  const schema = freshSchema();
  const { durable } = await createApp({ schema, workflows: [Parent, Child] });
  const { runId } = await durable.start(Parent, { n: 21 });
  await waitFor(async () => (await durable.getRun(runId))?.status === 'pending' && (await durable.getRun(runId))?.error !== null, {
    timeout: 30_000,
    message: 'the parent waits for its retry',
  });
  if (when === 'during the back-off') childGate.open();
  else {
    await waitFor(async () => (await durable.getRun(runId))?.waitingFor?.kind === 'children', { timeout: 30_000, message: 'the retried step waits' });
    childGate.open();
  }
  expect(await durable.waitForRun(runId, { timeout: 30_000 })).toMatchObject({ status: 'completed', result: 42 });
  expect(await sql(`SELECT status FROM ${ident(schema)}.runs WHERE parent_id = $1`, [runId])).toEqual([{ status: 'completed' }]);
  expect(attempts[runId]).toBeGreaterThanOrEqual(2);
});
