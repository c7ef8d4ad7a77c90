import { Controller, Get } from '@nestjs/common';
import { HealthCheck, HealthCheckService } from '@nestjs/terminus';
import { DurableHealthIndicator } from 'nestjs-durable';

@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly durable: DurableHealthIndicator,
  ) {}

  /** 200 `{ status: 'ok', info: { durable: { nodeId, pending, lagMs, … } } }` when healthy; else 503 with the reason. */
  @Get()
  @HealthCheck()
  check() {
    // down when the database does not answer, the worker loop stalled, or a due run has waited
    // longer than HEALTH_MAX_LAG (default 5 minutes)
    return this.health.check([() => this.durable.isHealthy('durable', { maxLag: process.env.HEALTH_MAX_LAG ?? '5m' })]);
  }
}
