import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { DurableConnection } from './core/durable.connection';
import { coreProviders } from './core/stores.providers';
import { WorkflowExplorer } from './definition/workflow.explorer';
import { WorkflowRegistry } from './definition/workflow.registry';
import { DurableService } from './durable.service';
import { FlowMaintenance } from './flows/flow.maintenance';
import { FlowsEngine } from './flows/flows.engine';
import { DurableHealthIndicator } from './health/durable.health';
import { DurableConfigurableModule } from './options/durable.module-definition';
import { ClusterReader } from './runs/cluster-reader';
import { KeyInsights } from './runs/key-insights';
import { QueueControls } from './runs/queue-controls';
import { RunAdmin } from './runs/run-admin';
import { RunEvents } from './runs/run-events';
import { RunReader } from './runs/run-reader';
import { Starter } from './runs/starter';
import { LocalStarts } from './core/local-starts';
import { Scheduler } from './schedules/scheduler';
import { Maintenance } from './worker/maintenance';
import { Worker } from './worker/worker';

/**
 * Durable, Postgres-backed workflows. `DurableModule.forRoot({ url })` or
 * `forRootAsync({ inject: [DataSource], useFactory: (dataSource) => ({ dataSource }) })`; global.
 */
@Module({
  imports: [DiscoveryModule],
  providers: [
    ...coreProviders,
    WorkflowRegistry,
    WorkflowExplorer,
    DurableConnection,
    LocalStarts,
    Starter,
    RunReader,
    RunAdmin,
    RunEvents,
    KeyInsights,
    ClusterReader,
    QueueControls,
    FlowsEngine,
    FlowMaintenance,
    Scheduler,
    Maintenance,
    Worker,
    DurableService,
    DurableHealthIndicator,
  ],
  // the internals the dashboard (nestjs-durable/dashboard) reads and acts through, and those the
  // interceptor of @IdempotentStart uses in the app's modules
  exports: [
    DurableService,
    DurableHealthIndicator,
    ...coreProviders,
    DurableConnection,
    WorkflowRegistry,
    RunAdmin,
    RunEvents,
    Scheduler,
    Starter,
    RunReader,
    QueueControls,
    FlowsEngine,
  ],
})
export class DurableModule extends DurableConfigurableModule {}
