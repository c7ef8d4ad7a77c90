import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { TerminusModule } from '@nestjs/terminus';
import { DurableConfigurableModule } from './options/durable.module-definition';
import { DurableService } from './durable.service';
import { WorkflowExplorer } from './definition/workflow.explorer';
import { WorkflowRegistry } from './definition/workflow.registry';
import { DurableCore } from './core/durable.core';
import { Maintenance } from './worker/maintenance';
import { FlowsEngine } from './flows/flows.engine';
import { Starter } from './runs/starter';
import { Worker } from './worker/worker';
import { Scheduler } from './schedules/scheduler';
import { DurableHealthIndicator } from './health/durable.health';
import { KeyInsights } from './runs/key-insights';

/**
 * Durable, Postgres-backed workflows. `DurableModule.forRoot({ url })` or
 * `forRootAsync({ inject: [DataSource], useFactory: (dataSource) => ({ dataSource }) })`; global.
 */
@Module({
  imports: [DiscoveryModule, TerminusModule],
  providers: [WorkflowRegistry, WorkflowExplorer, DurableCore, Starter, FlowsEngine, Maintenance, Worker, DurableService, DurableHealthIndicator, KeyInsights, Scheduler],
  exports: [DurableService, DurableHealthIndicator],
})
export class DurableModule extends DurableConfigurableModule {}
