import { Inject, Injectable, OnApplicationShutdown } from '@nestjs/common';
import { Pool } from 'pg';
import { RESOLVED_OPTIONS } from '../core/durable.constants';
import { DurableConnection } from '../core/durable.connection';
import { WorkflowRegistry } from '../definition/workflow.registry';
import { MAX_TIMER_MS, toMs } from '../domain/duration';
import { FlowsEngine } from '../flows/flows.engine';
import type { ResolvedOptions } from '../options/resolve-options';
import { ClusterReader } from '../runs/cluster-reader';
import { KeyInsights } from '../runs/key-insights';
import { RunReader } from '../runs/run-reader';
import { ActivityStore } from '../store/activity.store';
import { ControlsStore } from '../store/controls.store';
import { DashboardStore } from '../store/dashboard.store';
import { DefinitionsStore } from '../store/definitions.store';
import { Db } from '../store/db';
import { FlowsStore } from '../store/flows.store';
import { HistoryStore } from '../store/history.store';
import { NodesStore } from '../store/nodes.store';
import { RunsStore } from '../store/runs.store';
import { DASHBOARD_OPTIONS, type DurableDashboardOptions } from './dashboard.options';
import { PageReads } from './page-reads';

/** The readers the pages use. */
export interface Readers {
  runs: RunReader;
  keys: KeyInsights;
  cluster: ClusterReader;
  flows: FlowsEngine;
  /** The overview's backlog figures. */
  backlog: () => Promise<{ pending: number; lagMs: number }>;
  /** The run and flow pages' reads, bounded by what those pages show. */
  pages: PageReads;
}

/**
 * The module's readers on a small pool of their own whose statements are bounded by the
 * dashboard's `statementTimeout` (default 5 s): a page never holds a database connection longer,
 * and never takes one the workers need. Made on first use (the module's connection is open by then).
 */
@Injectable()
export class DashboardReads implements OnApplicationShutdown {
  private made?: Readers;
  private pool?: Pool;
  /** The pages' statement timeout (checked at startup; the client waits a second more, within a timer). */
  private readonly timeoutMs: number;

  constructor(
    @Inject(DASHBOARD_OPTIONS) dashboard: DurableDashboardOptions,
    @Inject(RESOLVED_OPTIONS) private readonly options: ResolvedOptions,
    private readonly connection: DurableConnection,
    private readonly registry: WorkflowRegistry,
    private readonly runsStore: RunsStore,
    private readonly history: HistoryStore,
    private readonly activity: ActivityStore,
    private readonly nodes: NodesStore,
    private readonly flowsStore: FlowsStore,
    private readonly controls: ControlsStore,
    private readonly definitions: DefinitionsStore,
    private readonly dashboardStore: DashboardStore,
  ) {
    this.timeoutMs = toMs(dashboard.statementTimeout ?? '5s', 'statementTimeout', MAX_TIMER_MS - 1_000);
  }

  /** The readers, bounded by the statement timeout. */
  get readers(): Readers {
    if (this.made) return this.made;
    const { timeoutMs } = this;
    const settings = this.options.transactionPooler ? {} : { statement_timeout: timeoutMs };
    this.pool = new Pool({ ...(this.connection.connectionConfig() as object), ...settings, max: 4 });
    // the module's connection with this pool in place of its own: the readers use `db` only
    const bounded = Object.create(this.connection, { db: { value: new Db(this.pool, false, timeoutMs + 1_000) } }) as DurableConnection;
    const { registry, runsStore, history, activity, nodes } = this;
    this.made = {
      runs: new RunReader(bounded, registry, runsStore, history),
      keys: new KeyInsights(bounded, registry, activity, runsStore, this.definitions),
      cluster: new ClusterReader(bounded, registry, runsStore, nodes, this.controls, this.options),
      flows: new FlowsEngine(bounded, registry, this.flowsStore, runsStore, activity),
      backlog: () => runsStore.backlog(bounded.db),
      pages: new PageReads(bounded.db, registry, this.dashboardStore, this.flowsStore),
    };
    return this.made;
  }

  async onApplicationShutdown(): Promise<void> {
    await this.pool?.end();
  }
}
