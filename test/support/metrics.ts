import { metrics } from '@opentelemetry/api';
import { DataPointType, MeterProvider, MetricReader, type MetricData, type SumMetricData } from '@opentelemetry/sdk-metrics';

/** Reads on demand only (no export). */
class TestReader extends MetricReader {
  protected async onForceFlush(): Promise<void> {}
  protected async onShutdown(): Promise<void> {}
}

/** What {@link testMeter} gives a spec. */
export interface TestMeter {
  /** The module's metrics (scope `nestjs-durable`) as they are now. */
  collect(): Promise<MetricData[]>;
  /** The sum of a counter's points whose attributes include `attrs` (0 before its first point). */
  counter(name: string, attrs?: Record<string, string>): Promise<number>;
}

/**
 * An in-memory meter for the spec that calls it (at its top level): the global meter provider from
 * before its first test, shut down after its last.
 */
export function testMeter(): TestMeter {
  const reader = new TestReader();
  const provider = new MeterProvider({ readers: [reader] });
  beforeAll(() => {
    metrics.setGlobalMeterProvider(provider);
  });
  afterAll(async () => {
    await provider.shutdown();
  });
  const collect = async () => {
    const { resourceMetrics } = await reader.collect();
    return resourceMetrics.scopeMetrics.filter((sm) => sm.scope.name === 'nestjs-durable').flatMap((sm) => sm.metrics);
  };
  return {
    collect,
    async counter(name, attrs = {}) {
      const m = (await collect()).find((x) => x.descriptor.name === name) as SumMetricData | undefined;
      if (!m) return 0;
      expect(m.dataPointType).toBe(DataPointType.SUM);
      return m.dataPoints.filter((p) => Object.entries(attrs).every(([k, v]) => p.attributes[k] === v)).reduce((n, p) => n + (p.value as number), 0);
    },
  };
}
