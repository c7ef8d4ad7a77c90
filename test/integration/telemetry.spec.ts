import { context, metrics, propagation, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { AlwaysOffSampler, BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { type HistogramMetricData } from '@opentelemetry/sdk-metrics';
import { KeyTakenError, RunContext, Step, Workflow } from '../../src';
import { createApp, freshSchema, ident, spawnNode, sql, waitFor } from '../support';
import { forceStatus } from '../support/keys';
import { testMeter } from '../support/metrics';

// ---- the SDK, with in-memory exporters ----------------------------------------------------------

const spans = new InMemorySpanExporter();
const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] });

const { collect, counter } = testMeter();

const contextManager = new AsyncLocalStorageContextManager();

beforeAll(() => {
  context.setGlobalContextManager(contextManager.enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(tracerProvider);
});

afterAll(async () => {
  await tracerProvider.shutdown();
});

const appTracer = () => trace.getTracer('test-app');

// ---- workflows ----------------------------------------------------------------------------------

@Workflow('tel_two')
class Two {
  @Step()
  async first(ctx: RunContext<{ n: number }>) {
    // the step's own spans are children of durable.step
    appTracer().startActiveSpan('user.work', (s) => s.end());
    return ctx.input.n;
  }

  @Step()
  async second(ctx: RunContext<{ n: number }>) {
    return ctx.input.n * 2;
  }
}

const flakyAttempts: number[] = [];
@Workflow('tel_flaky')
class Flaky {
  @Step({ retry: { attempts: 2, initialDelay: 50, backoff: 'fixed' } })
  async once(ctx: RunContext) {
    flakyAttempts.push(ctx.attempt);
    if (ctx.attempt === 1) throw new Error('first attempt fails');
    return 'ok';
  }
}

@Workflow('tel_fail')
class Fail {
  @Step({ retry: { attempts: 1 } })
  async boom() {
    throw new Error('boom');
  }
}

/** Registered here only to start runs; a child process runs them. */
@Workflow('tel_remote')
class Remote {
  @Step()
  async work() {}
}

@Workflow('tel_parent')
class Parent {
  @Step()
  async call(ctx: RunContext) {
    return ctx.callWorkflow('tel_two', { n: 5 });
  }
}

/** Its second step holds until the run is cancelled (its signal aborts). */
@Workflow('tel_cancelled')
class CancelledAfterCheckpoint {
  @Step()
  async first() {
    return 1;
  }

  @Step()
  async second(ctx: RunContext) {
    await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve, { once: true }));
  }
}

/** Records the trace context each attempt of its step runs in. */
const seenContexts: ({ traceId: string; traceFlags: number } | undefined)[] = [];
@Workflow('tel_peek')
class Peek {
  @Step()
  async look() {
    const sc = trace.getSpanContext(context.active());
    seenContexts.push(sc && { traceId: sc.traceId, traceFlags: sc.traceFlags });
  }
}

// ---- helpers ------------------------------------------------------------------------------------

const named = (name: string, runId?: string) =>
  spans.getFinishedSpans().filter((s) => s.name === name && (runId === undefined || s.attributes['durable.run_id'] === runId));

const parentOf = (s: ReadableSpan) => s.parentSpanContext?.spanId;

async function histogram(name: string, attrs: Record<string, string> = {}) {
  const m = (await collect()).find((x) => x.descriptor.name === name) as HistogramMetricData | undefined;
  if (!m) return { count: 0, sum: 0, unit: undefined as string | undefined };
  const points = m.dataPoints.filter((p) => Object.entries(attrs).every(([k, v]) => p.attributes[k] === v));
  return { count: points.reduce((n, p) => n + p.value.count, 0), sum: points.reduce((n, p) => n + (p.value.sum ?? 0), 0), unit: m.descriptor.unit };
}

// ---- tests --------------------------------------------------------------------------------------

describe('OpenTelemetry', () => {
  beforeEach(() => {
    spans.reset();
    flakyAttempts.length = 0;
  });

  it("a run's spans continue the trace of the request that started it", async () => {
    const { durable, schema } = await createApp({ workflows: [Two] });
    const request = appTracer().startSpan('GET /articles', { kind: SpanKind.SERVER });
    const { runId } = await context.with(trace.setSpan(context.active(), request), () => durable.start('tel_two', { n: 21 }, { key: 'article:1' }));
    request.end();
    const traceId = request.spanContext().traceId;
    await durable.waitForRun(runId, { timeout: 10_000 });
    await waitFor(() => named('durable.run', runId).length === 1 && named('durable.step', runId).length === 2, { message: 'run and step spans' });

    const [start] = named('durable.start');
    expect(start.spanContext().traceId).toBe(traceId);
    expect(parentOf(start)).toBe(request.spanContext().spanId);
    expect(start.kind).toBe(SpanKind.PRODUCER);
    expect(start.attributes).toMatchObject({
      'durable.workflow': 'tel_two',
      'durable.key': 'article:1',
      'durable.run_id': runId,
      'durable.outcome': 'created',
    });
    expect(start.instrumentationScope.name).toBe('nestjs-durable');

    // the context is stored with the run (W3C traceparent), so any node continues the trace
    const [row] = await sql(`select trace from ${ident(schema)}.runs where id = $1`, [runId]);
    expect(row.trace.traceparent).toContain(traceId);
    expect(row.trace.traceparent).toContain(start.spanContext().spanId);

    const [run] = named('durable.run', runId);
    expect(run.spanContext().traceId).toBe(traceId);
    expect(parentOf(run)).toBe(start.spanContext().spanId);
    expect(run.kind).toBe(SpanKind.CONSUMER);
    expect(run.attributes).toMatchObject({
      'durable.workflow': 'tel_two',
      'durable.run_id': runId,
      'durable.key': 'article:1',
      'durable.attempt': 1,
      'durable.outcome': 'completed',
    });

    const steps = named('durable.step', runId).sort((a, b) => (a.attributes['durable.step'] as string).localeCompare(b.attributes['durable.step'] as string));
    expect(steps.map((s) => s.attributes['durable.step'])).toEqual(['first', 'second']);
    for (const s of steps) {
      expect(s.spanContext().traceId).toBe(traceId);
      expect(parentOf(s)).toBe(run.spanContext().spanId);
      expect(s.attributes).toMatchObject({ 'durable.workflow': 'tel_two', 'durable.run_id': runId, 'durable.attempt': 1, 'durable.outcome': 'completed' });
    }
    const [user] = spans.getFinishedSpans().filter((s) => s.name === 'user.work');
    expect(parentOf(user)).toBe(steps[0].spanContext().spanId);
  });

  it('continues the trace on another node: a start-only node stores it, a worker node claims the run', async () => {
    const schema = freshSchema();
    const starter = await createApp({ schema, workflows: [Two], options: { worker: false, nodeId: 'api' } });
    const request = appTracer().startSpan('POST /jobs', { kind: SpanKind.SERVER });
    const { runId } = await context.with(trace.setSpan(context.active(), request), () => starter.durable.start('tel_two', { n: 1 }));
    request.end();
    const worker = await createApp({ schema, workflows: [Two], options: { nodeId: 'worker' } });
    await worker.durable.waitForRun(runId, { timeout: 10_000 });
    await waitFor(() => named('durable.run', runId).length === 1, { message: 'run span' });
    const [run] = named('durable.run', runId);
    expect(run.spanContext().traceId).toBe(request.spanContext().traceId);
    expect(parentOf(run)).toBe(
      named('durable.start')
        .find((s) => s.attributes['durable.run_id'] === runId)!
        .spanContext().spanId,
    );
  });

  it("a runAgain's waiting run continues the trace of the start that asked for it (the newest one)", async () => {
    const schema = freshSchema();
    const starter = await createApp({ schema, workflows: [Two], options: { worker: false } });
    const holder = await starter.durable.start('tel_two', { n: 1 }, { key: 'again' });
    await forceStatus(schema, holder.runId, 'running'); // picked up: a runAgain now leaves a run waiting
    const startIn = async (name: string, n: number) => {
      const request = appTracer().startSpan(name, { kind: SpanKind.SERVER });
      const started = await context.with(trace.setSpan(context.active(), request), () =>
        starter.durable.start('tel_two', { n }, { key: 'again', onDuplicate: 'runAgain' }),
      );
      request.end();
      return { started, traceId: request.spanContext().traceId };
    };
    const first = await startIn('PUT /again 1', 2);
    const second = await startIn('PUT /again 2', 3);
    expect(second.started).toEqual({ runId: first.started.runId, outcome: 'runAgain' });
    const waiting = second.started.runId;
    const [row] = await sql(`select trace from ${ident(schema)}.runs where id = $1`, [waiting]);
    expect(row.trace.traceparent).toContain(second.traceId);

    await forceStatus(schema, holder.runId, 'completed'); // the waiting run takes the key
    const worker = await createApp({ schema, workflows: [Two] });
    await worker.durable.waitForRun(waiting, { timeout: 10_000 });
    await waitFor(() => named('durable.run', waiting).length === 1, { message: 'run span' });
    expect(named('durable.run', waiting)[0].spanContext().traceId).toBe(second.traceId);
  });

  it('across processes: a run started here is executed by another process, whose spans continue this trace', async () => {
    const schema = freshSchema();
    const api = await createApp({ schema, workflows: [Remote], options: { worker: false, nodeId: 'api' } });
    const request = appTracer().startSpan('POST /remote', { kind: SpanKind.SERVER });
    const { runId } = await context.with(trace.setSpan(context.active(), request), () => api.durable.start('tel_remote', { n: 7 }));
    request.end();
    const [start] = named('durable.start').filter((s) => s.attributes['durable.run_id'] === runId);
    const worker = await spawnNode({ schema, nodeId: 'remote-worker', fixture: 'trace-node.js' });
    const line = await worker.waitForLine(new RegExp(`^SPAN durable\\.run \\S+ \\S+ ${runId} `), 20_000);
    const [, , traceId, parentId, , outcome] = line.split(' ');
    expect(traceId).toBe(request.spanContext().traceId);
    expect(parentId).toBe(start.spanContext().spanId);
    expect(outcome).toBe('completed');
    const step = await worker.waitForLine(new RegExp(`^SPAN durable\\.step ${traceId} \\S+ ${runId} completed`));
    expect(step).toBeDefined();
    expect((await api.durable.getRun(runId))!.status).toBe('completed');
  });

  it("a flow's nodes continue the trace of the request that started it (startFlow, rerunFlow)", async () => {
    const { durable } = await createApp({ workflows: [Two] });
    const inSpan = <T>(name: string, fn: () => Promise<T>) => {
      const span = appTracer().startSpan(name, { kind: SpanKind.SERVER });
      return context
        .with(trace.setSpan(context.active(), span), fn)
        .finally(() => span.end())
        .then((out) => ({ out, span }));
    };
    const flow = durable
      .flow({ name: 'tel_flow' })
      .add('a', Two, { n: 1 })
      .add('b', Two, { n: 2 }, { deps: ['a'] });
    const started = await inSpan('POST /flows', () => durable.startFlow(flow));
    const { flowId, runIds } = started.out;
    for (const id of Object.values(runIds)) expect((await durable.waitForRun(id, { timeout: 30_000 })).status).toBe('completed');
    await waitFor(() => Object.values(runIds).every((id) => named('durable.run', id).length === 1), { timeout: 15_000, message: 'a run span per node' });
    for (const id of Object.values(runIds)) {
      const [run] = named('durable.run', id);
      expect(run.spanContext().traceId).toBe(started.span.spanContext().traceId);
      expect(parentOf(run)).toBe(started.span.spanContext().spanId);
    }
    // a rerun's fresh runs continue the trace of the request that asked for it
    const rerun = await inSpan('POST /flows/rerun', () => durable.rerunFlow(flowId, { from: 'b' }));
    const id = rerun.out.runIds.b;
    await durable.waitForRun(id, { timeout: 30_000 });
    await waitFor(() => named('durable.run', id).length === 1, { timeout: 15_000, message: 'the rerun node’s run span' });
    expect(named('durable.run', id)[0].spanContext().traceId).toBe(rerun.span.spanContext().traceId);
  });

  it("a child run (ctx.callWorkflow) continues its parent's trace", async () => {
    const { durable } = await createApp({ workflows: [Two, Parent] });
    const { runId } = await durable.start('tel_parent');
    const run = await durable.waitForRun(runId, { timeout: 15_000 });
    expect(run.status).toBe('completed');
    await waitFor(() => named('durable.run').filter((s) => s.attributes['durable.workflow'] === 'tel_two').length === 1, { message: 'child run span' });
    const [child] = named('durable.run').filter((s) => s.attributes['durable.workflow'] === 'tel_two');
    const parentRuns = named('durable.run', runId);
    expect(parentRuns.length).toBeGreaterThanOrEqual(1);
    expect(child.spanContext().traceId).toBe(parentRuns[0].spanContext().traceId);
    // parented on the parent's step span that called it
    const callSteps = named('durable.step', runId).map((s) => s.spanContext().spanId);
    expect(callSteps).toContain(parentOf(child));
    // the parent's first attempt waited for the child: not a failure
    const first = named('durable.step', runId).find((s) => s.attributes['durable.outcome'] === 'waiting');
    expect(first).toBeDefined();
    expect(first!.status.code).not.toBe(SpanStatusCode.ERROR);
    expect(parentRuns.map((r) => r.attributes['durable.outcome'])).toEqual(expect.arrayContaining(['waiting', 'completed']));
  });

  it('a run cancelled after a checkpoint ends its run span as lost, not with the checkpoint', async () => {
    const { durable, schema } = await createApp({ workflows: [CancelledAfterCheckpoint] });
    const { runId } = await durable.start('tel_cancelled', {});
    // the first step's checkpoint is written and the second step runs
    await waitFor(async () => (await sql(`select 1 from ${ident(schema)}.runs where id = $1 and step = 1`, [runId])).length === 1);
    await durable.cancel(runId);
    await waitFor(() => named('durable.run', runId).length === 1);
    expect(named('durable.run', runId)[0].attributes['durable.outcome']).toBe('lost');
  });

  it('a retried step: a failed step span with the error, then a second run span that completes', async () => {
    const { durable } = await createApp({ workflows: [Flaky] });
    const { runId } = await durable.start('tel_flaky');
    await durable.waitForRun(runId, { timeout: 10_000 });
    await waitFor(() => named('durable.run', runId).length === 2 && named('durable.step', runId).length === 2, { message: 'two executions' });
    const runs = named('durable.run', runId).sort((a, b) => (a.attributes['durable.attempt'] as number) - (b.attributes['durable.attempt'] as number));
    expect(runs.map((r) => r.attributes['durable.outcome'])).toEqual(['retry', 'completed']);
    expect(runs[0].spanContext().traceId).toBe(runs[1].spanContext().traceId);
    const steps = named('durable.step', runId).sort((a, b) => (a.attributes['durable.attempt'] as number) - (b.attributes['durable.attempt'] as number));
    expect(steps.map((s) => [s.attributes['durable.attempt'], s.attributes['durable.outcome']])).toEqual([
      [1, 'failed'],
      [2, 'completed'],
    ]);
    expect(steps[0].status.code).toBe(SpanStatusCode.ERROR);
    expect(steps[0].events.some((e) => e.name === 'exception')).toBe(true);
    expect(steps[1].status.code).not.toBe(SpanStatusCode.ERROR);
  });

  it("durable.key.retaken counts a retry that takes a failed run's key back", async () => {
    const { durable, schema } = await createApp({ workflows: [Two], options: { worker: false } });
    const before = await counter('durable.key.retaken', { workflow: 'tel_two' });
    const a = await durable.start('tel_two', { n: 1 }, { key: 'rt' });
    await forceStatus(schema, a.runId, 'failed');
    const b = await durable.start('tel_two', { n: 2 }, { key: 'rt' });
    await forceStatus(schema, b.runId, 'completed');
    await durable.releaseKey(b.runId);
    await durable.retry(a.runId);
    expect(await counter('durable.key.retaken', { workflow: 'tel_two' })).toBe(before + 1);
  });

  it('durable.key.handoff counts a flow node taking a finished run’s key (startFlow, rerunFlow, appendFlow), not a refused flow', async () => {
    const { durable, schema } = await createApp({ workflows: [Two], options: { worker: false } });
    const handoffs = () => counter('durable.key.handoff', { workflow: 'tel_two' });
    const before = await handoffs();
    const old = await durable.start('tel_two', { n: 1 }, { key: 'fk1' });
    await forceStatus(schema, old.runId, 'completed');
    const flow = await durable.startFlow(durable.flow().add('a', 'tel_two', { n: 2 }, { key: 'fk1' }));
    expect(await handoffs()).toBe(before + 1);
    await forceStatus(schema, flow.runIds.a, 'completed');
    await durable.rerunFlow(flow.flowId, { from: 'a' });
    expect(await handoffs()).toBe(before + 2);
    const other = await durable.start('tel_two', { n: 5 }, { key: 'fk3' });
    await forceStatus(schema, other.runId, 'completed');
    await durable.startFlow(await durable.appendFlow(flow.flowId).then((b) => b.add('c', 'tel_two', { n: 6 }, { key: 'fk3' })));
    expect(await handoffs()).toBe(before + 3);
    await durable.start('tel_two', { n: 3 }, { key: 'fk2' }); // still going: the flow is refused
    await expect(durable.startFlow(durable.flow().add('b', 'tel_two', { n: 4 }, { key: 'fk2' }))).rejects.toBeInstanceOf(KeyTakenError);
    expect(await handoffs()).toBe(before + 3);
  });

  it('counters and histograms: key duplicate / handoff / release, runs finished, step duration, pickup latency', async () => {
    const { durable } = await createApp({ workflows: [Two, Fail] });
    const before = {
      dup: await counter('durable.key.duplicate', { workflow: 'tel_two', outcome: 'useExisting' }),
      handoff: await counter('durable.key.handoff', { workflow: 'tel_two' }),
      release: await counter('durable.key.release', { workflow: 'tel_two' }),
      completed: await counter('durable.run.finished', { workflow: 'tel_two', status: 'completed' }),
      failed: await counter('durable.run.finished', { workflow: 'tel_fail', status: 'failed' }),
      steps: (await histogram('durable.step.duration', { workflow: 'tel_two' })).count,
      pickups: (await histogram('durable.run.pickup_latency', { workflow: 'tel_two' })).count,
    };
    const first = await durable.start('tel_two', { n: 1 }, { key: 'm1', runAt: new Date(Date.now() + 60_000) });
    // two duplicates while the first run is pending
    expect((await durable.start('tel_two', { n: 1 }, { key: 'm1' })).outcome).toBe('useExisting');
    expect((await durable.start('tel_two', { n: 2 }, { key: 'm1' })).outcome).toBe('useExisting');
    expect(await counter('durable.key.duplicate', { workflow: 'tel_two', outcome: 'useExisting' })).toBe(before.dup + 2);
    await durable.cancel(first.runId);
    // the key goes from the cancelled run to a new one
    const second = await durable.start('tel_two', { n: 3 }, { key: 'm1' });
    expect(second.outcome).toBe('created');
    expect(await counter('durable.key.handoff', { workflow: 'tel_two' })).toBe(before.handoff + 1);
    await durable.waitForRun(second.runId, { timeout: 10_000 });
    await durable.releaseKey(second.runId, { by: 'test' });
    expect(await counter('durable.key.release', { workflow: 'tel_two' })).toBe(before.release + 1);
    const failed = await durable.start('tel_fail');
    await durable.waitForRun(failed.runId, { timeout: 10_000 });
    await waitFor(async () => (await counter('durable.run.finished', { workflow: 'tel_fail', status: 'failed' })) === before.failed + 1, {
      message: 'failed run counted',
    });
    expect(await counter('durable.run.finished', { workflow: 'tel_two', status: 'completed' })).toBe(before.completed + 1);
    const stepHist = await histogram('durable.step.duration', { workflow: 'tel_two' });
    expect(stepHist.count).toBe(before.steps + 2);
    expect(stepHist.unit).toBe('s');
    expect((await histogram('durable.step.duration', { workflow: 'tel_two', step: 'first', outcome: 'completed' })).count).toBeGreaterThanOrEqual(1);
    const pickup = await histogram('durable.run.pickup_latency', { workflow: 'tel_two' });
    expect(pickup.count).toBe(before.pickups + 1);
    expect(pickup.unit).toBe('s');
    expect(pickup.sum).toBeGreaterThanOrEqual(0);
    expect(pickup.sum).toBeLessThan(30);
  });

  it("without a tracer, a run started inside a trace still runs its steps in that trace's context (nothing recorded)", async () => {
    // a propagator but no tracer provider: the API's no-op spans, which carry the starter's trace
    trace.disable();
    seenContexts.length = 0;
    try {
      const { durable } = await createApp({ workflows: [Peek] });
      spans.reset();
      const traceId = '0af7651916cd43dd8448eb211c80319c';
      const remote = trace.setSpanContext(context.active(), { traceId, spanId: 'b7ad6b7169203331', traceFlags: 1, isRemote: true });
      const { runId } = await context.with(remote, () => durable.start('tel_peek', {}));
      expect((await durable.waitForRun(runId, { timeout: 10_000 })).status).toBe('completed');
      // and one started outside any trace runs in none
      const { runId: plain } = await durable.start('tel_peek', {});
      expect((await durable.waitForRun(plain, { timeout: 10_000 })).status).toBe('completed');
      expect(seenContexts).toEqual([{ traceId, traceFlags: 1 }, undefined]);
      expect(spans.getFinishedSpans()).toHaveLength(0);
    } finally {
      trace.setGlobalTracerProvider(tracerProvider);
    }
  });

  it("with a tracer that samples nothing, steps still run in the run's (unsampled) trace", async () => {
    const sampledOut = new BasicTracerProvider({ sampler: new AlwaysOffSampler(), spanProcessors: [new SimpleSpanProcessor(spans)] });
    trace.disable();
    trace.setGlobalTracerProvider(sampledOut);
    seenContexts.length = 0;
    try {
      const { durable } = await createApp({ workflows: [Peek] });
      spans.reset();
      const request = trace.getTracer('test-app').startSpan('GET /peek');
      const { runId } = await context.with(trace.setSpan(context.active(), request), () => durable.start('tel_peek', {}));
      request.end();
      expect((await durable.waitForRun(runId, { timeout: 10_000 })).status).toBe('completed');
      expect(seenContexts).toEqual([{ traceId: request.spanContext().traceId, traceFlags: 0 }]);
      expect(spans.getFinishedSpans()).toHaveLength(0);
    } finally {
      trace.disable();
      trace.setGlobalTracerProvider(tracerProvider);
      await sampledOut.shutdown();
    }
  });

  it('without an SDK nothing is recorded and no trace context is stored', async () => {
    trace.disable();
    metrics.disable();
    propagation.disable();
    try {
      const { durable, schema } = await createApp({ workflows: [Two] });
      spans.reset();
      const { runId } = await durable.start('tel_two', { n: 1 }, { key: 'quiet' });
      const run = await durable.waitForRun(runId, { timeout: 10_000 });
      expect(run.status).toBe('completed');
      expect(spans.getFinishedSpans()).toHaveLength(0);
      const [row] = await sql(`select trace from ${ident(schema)}.runs where id = $1`, [runId]);
      expect(row.trace).toBeNull();
    } finally {
      propagation.setGlobalPropagator(new W3CTraceContextPropagator());
      trace.setGlobalTracerProvider(tracerProvider);
    }
  });
});
