/**
 * The testing kit's skipTime and a flow node's workflow timeout: the timeout counts from when the
 * node becomes due, not while it waits for its dependencies (docs/flows.md), skipped time or not.
 */
import { RunContext, Step, Workflow } from '../../src';
import { DurableTestEnv } from '../../src/testing';

@Workflow('kit_fd_gate')
class Gate {
  @Step()
  async hold(ctx: RunContext) {
    return ctx.waitForEvent('open');
  }
}

@Workflow('kit_fd_node', { timeout: '1h' })
class Node {
  @Step()
  async done() {
    return 'done';
  }
}

let env: DurableTestEnv;
beforeAll(async () => {
  env = await DurableTestEnv.create({ providers: [Gate, Node] });
});
afterAll(() => env.close());

it('a node that waited for its dependencies through skipped time longer than its timeout runs once due', async () => {
  const { runIds } = await env.durable.startFlow(
    env.durable
      .flow()
      .add('gate', Gate, {})
      .add('node', Node, {}, { deps: ['gate'] }),
  );
  await env.runUntilIdle();
  expect(await env.durable.getRun(runIds.gate)).toMatchObject({ status: 'waiting' });
  await env.skipTime('2h');
  expect(await env.durable.sendEvent(runIds.gate, 'open', {})).toBe('delivered');
  await env.runUntilIdle();
  expect(await env.durable.getRun(runIds.node)).toMatchObject({ status: 'completed', result: 'done' });
});
