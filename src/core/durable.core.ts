import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import type { Pool } from 'pg';
import { DataSource } from 'typeorm';
import { DURABLE_OPTIONS } from '../options/durable.module-definition';
import { LOG_CONTEXT } from './durable.constants';
import { DurableValidationError } from '../errors';
import type { DurableModuleOptions } from '../options/durable-options.interface';
import { resolveOptions, ResolvedOptions } from '../options/resolve-options';
import { WorkflowExplorer } from '../definition/workflow.explorer';
import { WorkflowRegistry } from '../definition/workflow.registry';
import { Db } from '../store/db';
import { RunsStore } from '../store/runs.store';
import { NodesStore } from '../store/nodes.store';
import { MemosStore } from '../store/memos.store';
import { ActivityStore } from '../store/activity.store';
import { EventsStore } from '../store/events.store';
import { WaitsStore } from '../store/waits.store';
import { runMigrations } from '../store/migrator';
import { RunRow, toRunInfo } from '../store/run-row';
import type { RunInfo } from '../domain/run-info';

/**
 * The module's shared parts: resolved options, the DataSource and its pool, the stores and the
 * workflow registry. Ready after `onModuleInit` (options validated, migrations applied, workflows
 * discovered).
 */
@Injectable()
export class DurableCore implements OnModuleInit, OnApplicationShutdown {
  readonly options: ResolvedOptions;
  readonly logger = new Logger(LOG_CONTEXT);
  dataSource: DataSource;
  db: Db;
  runs: RunsStore;
  nodes: NodesStore;
  memos: MemosStore;
  activity: ActivityStore;
  events: EventsStore;
  waits: WaitsStore;
  private ownsDataSource = false;

  constructor(
    @Inject(DURABLE_OPTIONS) raw: DurableModuleOptions,
    readonly registry: WorkflowRegistry,
    private readonly explorer: WorkflowExplorer,
  ) {
    this.options = resolveOptions(raw);
    const { schema } = this.options;
    this.runs = new RunsStore(schema, `durable_${schema}`);
    this.nodes = new NodesStore(schema);
    this.memos = new MemosStore(schema);
    this.activity = new ActivityStore(schema);
    this.events = new EventsStore(schema, `durable_${schema}`);
    this.waits = new WaitsStore(schema);
  }

  async onModuleInit(): Promise<void> {
    this.explorer.explore();
    const { worker } = this.options;
    const unknown = worker === false ? [] : (worker.workflows ?? []).filter((n) => !this.registry.find(n));
    if (unknown.length) {
      throw new DurableValidationError(`DurableModule options are invalid:\n  - worker.workflows: no registered workflow is named ${unknown.map((n) => `"${n}"`).join(', ')}`);
    }
    this.dataSource = this.options.dataSource ?? new DataSource({ type: 'postgres', url: this.options.url, entities: [] });
    if (!this.dataSource.isInitialized) {
      await this.dataSource.initialize();
      this.ownsDataSource = !this.options.dataSource;
    }
    this.db = new Db((this.dataSource.driver as unknown as { master: Pool }).master);
    if (this.options.migrationsRun) {
      const applied = await runMigrations(this.dataSource, this.options.schema);
      if (applied.length) this.logger.log(`applied migrations ${applied.join(', ')} to schema "${this.options.schema}"`);
    }
  }

  /** Last of the shutdown hooks, so the worker has drained (in `beforeApplicationShutdown`) first. */
  async onApplicationShutdown(): Promise<void> {
    if (this.ownsDataSource && this.dataSource.isInitialized) await this.dataSource.destroy();
  }

  /** The pg connection settings of the pool (for the worker's dedicated LISTEN connection). */
  connectionConfig(): object {
    return (this.db.pool as unknown as { options: object }).options;
  }

  /** A row as the public {@link RunInfo}. */
  info(row: RunRow): RunInfo {
    return toRunInfo(row, (workflow, index) => this.registry.find(workflow)?.steps[index]?.name ?? null);
  }
}
