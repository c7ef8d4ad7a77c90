import { RunContext, Step, Workflow } from '../../src';
import { createApp, ident, sql, waitFor } from '../support';

/**
 * A flow node's workflow timeout counts from when it becomes due, not while it waits for its
 * dependencies (docs/flows.md): a buffered event sent to a node still waiting for them, longer than
 * its timeout after the flow started, is kept for the node's wait — the node is not past its deadline.
 */

@Workflow('fnd_gate')
class Gate {
  @Step()
  async hold(ctx: RunContext) {
    return ctx.waitForEvent('open');
  }
}

@Workflow('fnd_node', { timeout: '1s' })
class Node {
  @Step()
  async listen(ctx: RunContext) {
    return ctx.waitForEvent('go');
  }
}

it('a buffered event to a flow node waiting for its dependencies longer than its timeout is kept, and the node gets it', async () => {
  const { durable, schema } = await createApp({ workflows: [Gate, Node] });
  const { runIds } = await durable.startFlow(
    durable
      .flow()
      .add('gate', Gate, {})
      .add('node', Node, {}, { deps: ['gate'] }),
  );
  const node = runIds.node;
  await waitFor(async () => (await durable.getRun(runIds.gate))?.status === 'waiting', { timeout: 30_000, message: 'the gate waits' });
  // the node's timeout has passed since the flow started (the node still waits for the gate)
  await waitFor(
    async () =>
      (await sql(`SELECT 1 FROM ${ident(schema)}.runs WHERE id = $1 AND status = 'waiting' AND run_at + timeout_ms * interval '1 millisecond' < now()`, [node]))
        .length === 1,
    { timeout: 30_000, message: "the node's timeout has passed since it was made" },
  );
  expect(await durable.sendEvent(node, 'go', { early: true }, { buffer: true })).toBe('kept');
  expect(await durable.sendEvent(runIds.gate, 'open', {})).toBe('delivered');
  expect(await durable.waitForRun(node, { timeout: 30_000 })).toMatchObject({ status: 'completed', result: { early: true } });
});
