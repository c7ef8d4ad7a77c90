import type { Logger } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import type { WorkflowRegistry } from '../definition/workflow.registry';
import type { Db } from '../store/db';
import type { EventsStore } from '../store/events.store';
import type { FlowsStore } from '../store/flows.store';
import type { MemosStore } from '../store/memos.store';
import type { RunsStore } from '../store/runs.store';
import type { WaitsStore } from '../store/waits.store';

/**
 * What the execution of a claimed run, its steps' contexts and their waits use: the connection,
 * the stores of the tables they touch and the registry. Made once per node by the worker.
 */
export interface RunServices {
  readonly db: Db;
  /** For `ctx.transaction` (the app's entities live on it). */
  readonly dataSource: DataSource;
  readonly registry: WorkflowRegistry;
  readonly runs: RunsStore;
  readonly waits: WaitsStore;
  readonly events: EventsStore;
  readonly memos: MemosStore;
  readonly flows: FlowsStore;
  readonly logger: Logger;
}
