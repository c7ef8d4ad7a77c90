import { RunContext, Step, Workflow } from '../../src';
import { ConcurrencyTracker, createApp, Gate, waitFor } from '../support';

const gate = new Gate();
const inside = new ConcurrencyTracker();
const order: string[] = [];

@Workflow('par_echo')
class Echo {
  @Step()
  async run(ctx: RunContext) {
    order.push(ctx.flow!.name);
    return ctx.flow!.name;
  }
}

/** Holds its node inside its step until the test opens the gate. */
@Workflow('par_held')
class Held {
  @Step()
  async run(ctx: RunContext) {
    inside.enter();
    try {
      await gate.wait(ctx.signal);
    } finally {
      inside.exit();
    }
    order.push(ctx.flow!.name);
    return ctx.flow!.name;
  }
}

describe('DAG flows: siblings', () => {
  it('c and d, which both depend only on b, run at the same time; e waits for both (the spec example)', async () => {
    const { durable } = await createApp({ workflows: [Echo, Held], concurrency: 5 });
    const { runIds } = await durable.startFlow(
      durable
        .flow()
        .add('a', Echo)
        .add('b', Echo, {}, { deps: ['a'] })
        .add('c', Held, {}, { deps: ['b'] })
        .add('d', Held, {}, { deps: ['b'] })
        .add('e', Echo, {}, { deps: ['c', 'd'] }),
    );
    // both siblings are inside their step at once: neither waits for the other
    await waitFor(() => gate.arrived === 2, { message: 'c and d both running' });
    expect(inside.max).toBe(2);
    expect((await durable.getRun(runIds.c))!.status).toBe('running');
    expect((await durable.getRun(runIds.d))!.status).toBe('running');
    expect((await durable.getRun(runIds.e))!.status).toBe('waiting');
    expect(order).toEqual(['a', 'b']);
    gate.open();
    const e = await waitFor(async () => {
      const r = await durable.getRun(runIds.e);
      return r?.status === 'completed' ? r : undefined;
    });
    expect(e.result).toBe('e');
    expect(order.slice(0, 2)).toEqual(['a', 'b']);
    expect(order.slice(2, 4).sort()).toEqual(['c', 'd']);
    expect(order[4]).toBe('e');
  });
});
