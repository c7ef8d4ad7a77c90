import { Logger } from '@nestjs/common';
import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { BasicTracerProvider, ConsoleSpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';

/**
 * `OTEL_TRACES_EXPORTER=console`: register a minimal OpenTelemetry SDK that prints every span
 * (durable.start, durable.run, durable.step, and the request spans of {@link TraceMiddleware}) to
 * stdout. nestjs-durable itself only uses `@opentelemetry/api`; without this (or another SDK, e.g.
 * `@opentelemetry/sdk-node` with an OTLP exporter) its telemetry costs nothing.
 */
export function setupTracing(): boolean {
  const exporter = process.env.OTEL_TRACES_EXPORTER;
  if (exporter !== 'console') {
    if (exporter && exporter !== 'none') {
      new Logger('Tracing').warn(`OTEL_TRACES_EXPORTER=${exporter} is not wired in the sample (only "console"); no traces are exported`);
    }
    return false;
  }
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(new ConsoleSpanExporter())] }));
  new Logger('Tracing').log('exporting traces to the console (OTEL_TRACES_EXPORTER=console)');
  return true;
}
