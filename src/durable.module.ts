import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { TerminusModule } from '@nestjs/terminus';
import { DurableConfigurableModule } from './durable.module-definition';
import { DurableService } from './durable.service';
import { WorkflowExplorer } from './discovery/workflow.explorer';
import { WorkflowRegistry } from './discovery/workflow.registry';
import { DurableCore } from './engine/durable.core';
import { Maintenance } from './engine/maintenance';
import { FlowsEngine } from './flows/flows.service';
import { Starter } from './engine/start';
import { Worker } from './engine/worker';
import { Scheduler } from './engine/scheduler';
import { DurableHealthIndicator } from './observe/durable.health';
import { KeyInsights } from './observe/key-insights';

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
