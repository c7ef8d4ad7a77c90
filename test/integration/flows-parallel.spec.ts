import { DurableValidationError, RunContext, Step, Workflow } from '../../src';
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

const readerErrors: unknown[] = [];

/** Streams its flow with a page size the caller got wrong. */
@Workflow('par_bad_reader')
class BadReader {
  @Step()
  async run(ctx: RunContext<{ pageSize: unknown }>) {
    const pageSize = ctx.input.pageSize === 'NaN' ? Number.NaN : ctx.input.pageSize;
    try {
      for await (const job of ctx.flow!.streamJobs({ pageSize: pageSize as number })) void job;
      readerErrors.push(null);
    } catch (err) {
      readerErrors.push(err);
    }
    return null;
  }
}

describe('DAG flows: readers', () => {
  it('streamJobs refuses a page size that is not a number with DurableValidationError, before any SQL', async () => {
    const { durable } = await createApp({ workflows: [BadReader] });
    const { runIds } = await durable.startFlow(
      durable.flow().add('nan', BadReader, { pageSize: 'NaN' }).add('text', BadReader, { pageSize: 'ten' }).add('tiny', BadReader, { pageSize: 0.5 }),
    );
    await waitFor(async () => {
      const runs = await Promise.all(Object.values(runIds).map((id) => durable.getRun(id)));
      return runs.every((r) => r?.status === 'completed');
    });
    expect(readerErrors).toHaveLength(3);
    const bad = readerErrors.filter((e) => e !== null);
    expect(bad).toHaveLength(2);
    for (const e of bad) {
      expect(e).toBeInstanceOf(DurableValidationError);
      expect(String((e as Error).message)).toMatch(/pageSize/);
    }
  });
});
