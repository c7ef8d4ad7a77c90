import { Controller, Get } from '@nestjs/common';
import { HealthCheck, HealthCheckService } from '@nestjs/terminus';
import { DurableHealthIndicator } from 'nestjs-durable';

@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly durable: DurableHealthIndicator,
  ) {}

  /** 200 `{ status: 'ok', … }` when the database answers and this node's worker is alive; else 503. */
  @Get()
  @HealthCheck()
  check() {
    return this.health.check([() => this.durable.isHealthy('durable')]);
  }
}
