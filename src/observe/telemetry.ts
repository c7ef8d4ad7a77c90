import {
  context,
  isSpanContextValid,
  metrics,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Counter,
  type Histogram,
  type MeterProvider,
  type Span,
  type SpanOptions,
} from '@opentelemetry/api';

/**
 * OpenTelemetry for the module, through `@opentelemetry/api` only: the app brings (or does not
 * bring) the SDK. With no SDK registered every helper here runs against the API's no-op tracer and
 * meter: no span is recorded, no attribute is computed, nothing is exported.
 *
 * Spans: `durable.start` (around `start`/`startMany`; its context is stored with the run),
 * `durable.run` (one per execution of a claimed run, child of the stored context so it continues
 * the starter's trace in whatever process claims it), `durable.step` (one per attempt; the step's
 * own spans are its children). Metrics: see {@link instruments}.
 */

/** Name (and version) of the tracer and the meter. */
export const INSTRUMENTATION_NAME = 'nestjs-durable';
const INSTRUMENTATION_VERSION = '0.1.0';

/** Span attribute names. */
export const ATTR = {
  workflow: 'durable.workflow',
  runId: 'durable.run_id',
  key: 'durable.key',
  step: 'durable.step',
  attempt: 'durable.attempt',
  outcome: 'durable.outcome',
} as const;

/**
 * The module's tracer, looked up on the global provider at each use (an SDK provider caches it; a
 * tracer kept from load time would keep delegating to a provider the app has since replaced).
 */
export function tracer() {
  return trace.getTracer(INSTRUMENTATION_NAME, INSTRUMENTATION_VERSION);
}

interface Instruments {
  keyDuplicate: Counter;
  keyHandoff: Counter;
  keyRelease: Counter;
  keyRetaken: Counter;
  runFinished: Counter;
  stepDuration: Histogram;
  pickupLatency: Histogram;
}

let cached: { provider: MeterProvider; instruments: Instruments } | undefined;

/**
 * The module's instruments on the global meter provider. Re-created when the provider changes (an
 * instrument made on the no-op provider stays a no-op, so they cannot be made once at load time).
 */
export function instruments(): Instruments {
  const provider = metrics.getMeterProvider();
  if (cached?.provider !== provider) {
    const meter = provider.getMeter(INSTRUMENTATION_NAME, INSTRUMENTATION_VERSION);
    cached = {
      provider,
      instruments: {
        keyDuplicate: meter.createCounter('durable.key.duplicate', {
          description: 'Starts that found their key held (attributes: workflow, outcome)',
        }),
        keyHandoff: meter.createCounter('durable.key.handoff', { description: 'Keys handed from a finished run to a new one' }),
        keyRelease: meter.createCounter('durable.key.release', { description: 'Keys released with releaseKey' }),
        keyRetaken: meter.createCounter('durable.key.retaken', { description: 'Keys a retried run took back from a newer run' }),
        runFinished: meter.createCounter('durable.run.finished', { description: 'Runs that reached a final status (attributes: workflow, status)' }),
        stepDuration: meter.createHistogram('durable.step.duration', { unit: 's', description: 'Duration of one step attempt' }),
        pickupLatency: meter.createHistogram('durable.run.pickup_latency', {
          unit: 's',
          description: 'Time from a run being due (run_at) to a worker claiming it',
        }),
      },
    };
  }
  return cached.instruments;
}

/** Key activity → its counter (called by the engine beside each activity record it writes). */
export function emitKeyMetric(kind: string, workflow: string, details: { outcome?: unknown } = {}): void {
  const i = instruments();
  switch (kind) {
    case 'key_duplicate':
      i.keyDuplicate.add(1, { workflow, outcome: String(details.outcome ?? 'unknown') });
      break;
    case 'key_handed_off':
      emitKeyHandoffs(workflow);
      break;
    case 'key_released':
      i.keyRelease.add(1, { workflow });
      break;
    case 'key_retaken':
      i.keyRetaken.add(1, { workflow });
      break;
  }
}

/** `n` more `durable.key.handoff` of `workflow` (hand-offs made by the key trigger). */
export function emitKeyHandoffs(workflow: string, n = 1): void {
  instruments().keyHandoff.add(n, { workflow });
}

/** One more run (or `n` more) of `workflow` reached final `status`. */
export function emitRunFinished(workflow: string, status: string, n = 1): void {
  instruments().runFinished.add(n, { workflow, status });
}

/**
 * The active trace context serialised for storage with a new run (W3C `traceparent`/`tracestate`
 * with the registered propagator), or null when there is nothing to propagate.
 */
export function traceCarrier(): Record<string, string> | null {
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return Object.keys(carrier).length ? carrier : null;
}

/** The context a stored carrier describes (the root context when there is none). */
export function contextFrom(carrier: Record<string, string> | null | undefined): Context {
  return carrier && typeof carrier === 'object' ? propagation.extract(ROOT_CONTEXT, carrier) : ROOT_CONTEXT;
}

function errorOutcome(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : 'error';
}

function recordError(span: Span, err: unknown): void {
  if (!span.isRecording()) return;
  span.recordException(err instanceof Error ? err : String(err));
  span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
}

/**
 * True for a span that neither records nor carries a trace: the API's no-op span (no SDK registered,
 * no trace to continue). Nothing could join it or see it end, so it is neither made active nor
 * ended: for a short step, switching the context costs more than the step.
 */
function inert(span: Span): boolean {
  return !span.isRecording() && !isSpanContextValid(span.spanContext());
}

/** Runs `fn` with `span` active (a child of `parent`), ending the span when `fn` settles; an inert span is skipped. */
function withSpan<T>(span: Span, parent: Context, fn: () => Promise<T>): Promise<T> {
  if (inert(span)) return fn();
  return context.with(trace.setSpan(parent, span), async () => {
    try {
      return await fn();
    } finally {
      span.end();
    }
  });
}

function inSpan<T>(name: string, options: SpanOptions, parent: Context, fn: (span: Span) => Promise<T>): Promise<T> {
  const span = tracer().startSpan(name, options, parent);
  return withSpan(span, parent, async () => {
    try {
      return await fn(span);
    } catch (err) {
      recordError(span, err);
      if (span.isRecording()) span.setAttribute(ATTR.outcome, errorOutcome(err));
      throw err;
    }
  });
}

/**
 * `durable.start` around a start (or a batch): active while the runs are planned, so
 * {@link traceCarrier} stores this span's context with them. `fn` may call {@link startDone}.
 */
export function startSpan<T>(workflow: string, key: string | null | undefined, fn: (span: Span) => Promise<T>): Promise<T> {
  const attributes: Attributes = { [ATTR.workflow]: workflow };
  if (key !== undefined && key !== null) attributes[ATTR.key] = key;
  return inSpan('durable.start', { kind: SpanKind.PRODUCER, attributes }, context.active(), fn);
}

/** Records a start's result on its span and passes it through. */
export function startDone<T extends { runId: string; outcome: string } | { error: unknown } | unknown[]>(span: Span, result: T): T {
  if (!span.isRecording()) return result;
  if (Array.isArray(result)) span.setAttribute('durable.count', result.length);
  else if ('runId' in result) span.setAttributes({ [ATTR.runId]: result.runId, [ATTR.outcome]: result.outcome });
  return result;
}

/** What {@link runSpan} needs of a claimed row. */
export interface TracedRow {
  id: string;
  workflow: string;
  key: string | null;
  attempt: number;
  trace?: Record<string, string> | null;
  run_at?: Date | string | null;
}

const runSpans = new WeakMap<TracedRow, { span: Span; outcome?: string }>();

/**
 * `durable.run` for one execution of a claimed run, parented on the context stored at start (so it
 * continues the starter's trace across processes); also records the pickup latency.
 */
export function runSpan<T>(row: TracedRow, fn: () => Promise<T>): Promise<T> {
  if (row.run_at) {
    const due = new Date(row.run_at).getTime();
    if (!Number.isNaN(due)) instruments().pickupLatency.record(Math.max(0, Date.now() - due) / 1000, { workflow: row.workflow });
  }
  const attributes: Attributes = { [ATTR.workflow]: row.workflow, [ATTR.runId]: row.id, [ATTR.attempt]: row.attempt };
  if (row.key !== null) attributes[ATTR.key] = row.key;
  const parent = contextFrom(row.trace);
  const span = tracer().startSpan('durable.run', { kind: SpanKind.CONSUMER, attributes }, parent);
  // a span that does not record has no outcome to set: only its context (if it carries a trace) matters
  if (!span.isRecording()) return withSpan(span, parent, fn);
  return withSpan(span, parent, async () => {
    const state: { span: Span; outcome?: string } = { span };
    runSpans.set(row, state);
    try {
      return await fn();
    } finally {
      span.setAttribute(ATTR.outcome, state.outcome ?? 'lost');
      runSpans.delete(row);
    }
  });
}

/**
 * Notes a transition the execution of `row` submitted: the run span's outcome (final status,
 * `retry`, `waiting`, `compensating`, or `lost` when it no longer owned the run) and
 * `durable.run.finished`. A checkpoint between two steps (`running`) is no outcome: an execution
 * that loses its run after one ends `lost`.
 */
export function runTransition(row: TracedRow, t: { status: string; final?: boolean }, owned: boolean): void {
  const state = runSpans.get(row);
  if (!owned) {
    if (state) state.outcome = 'lost';
    return;
  }
  if (state && t.status !== 'running') state.outcome = t.status === 'pending' ? 'retry' : t.status;
  if (t.final) emitRunFinished(row.workflow, t.status);
}

/** A step attempt that ended because the run must wait (not a failure): see engine/suspension.ts. */
function isSuspensionLike(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as Record<symbol, unknown>)[Symbol.for('nestjs-durable.suspension')] === true;
}

/** `durable.step` for one attempt of a step, plus `durable.step.duration`. */
export function stepSpan<T>(row: TracedRow, step: string, attempt: number, fn: () => Promise<T>): Promise<T> {
  const attributes: Attributes = { [ATTR.workflow]: row.workflow, [ATTR.runId]: row.id, [ATTR.step]: step, [ATTR.attempt]: attempt };
  if (row.key !== null) attributes[ATTR.key] = row.key;
  const t0 = performance.now();
  const parent = context.active();
  const span = tracer().startSpan('durable.step', { kind: SpanKind.INTERNAL, attributes }, parent);
  let outcome = 'completed';
  return withSpan(span, parent, async () => {
    try {
      return await fn();
    } catch (err) {
      if (isSuspensionLike(err)) outcome = 'waiting';
      else {
        outcome = 'failed';
        recordError(span, err);
      }
      throw err;
    } finally {
      if (span.isRecording()) span.setAttribute(ATTR.outcome, outcome);
      instruments().stepDuration.record((performance.now() - t0) / 1000, { workflow: row.workflow, step, outcome });
    }
  });
}
