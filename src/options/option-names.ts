import { optionNames } from '../domain/validation';
import type { DurableModuleOptions, RetentionOptions, WorkerOptions } from './durable-options.interface';
import type { DebounceOptions, StepOptions, WorkflowOptions } from './workflow-options.interface';

/** The option names of `@Workflow` (anything else is refused as misspelt). */
export const WORKFLOW_OPTION_NAMES = optionNames<WorkflowOptions>({
  reuse: true,
  onDuplicate: true,
  debounce: true,
  timeout: true,
  retry: true,
  priority: true,
  concurrency: true,
  rateLimit: true,
});

/** The option names of `@Workflow({ debounce })`. */
export const DEBOUNCE_OPTION_NAMES = optionNames<DebounceOptions>({ period: true, timeout: true, merge: true });

/** The option names of `@Step`. */
export const STEP_OPTION_NAMES = optionNames<StepOptions>({ retry: true, timeout: true, compensate: true });

/** The option names of `DurableModule.forRoot` (anything else is refused as misspelt). */
export const MODULE_OPTION_NAMES = optionNames<DurableModuleOptions>({
  dataSource: true,
  url: true,
  schema: true,
  migrationsRun: true,
  worker: true,
  nodeId: true,
  heartbeatInterval: true,
  nodeTimeout: true,
  retention: true,
  shutdownTimeout: true,
  activityCommit: true,
  statementTimeout: true,
  lockTimeout: true,
  connectTimeout: true,
  keepAlive: true,
  transactionPooler: true,
  transactionManager: true,
});

/** The option names of `worker`. */
export const WORKER_OPTION_NAMES = optionNames<WorkerOptions>({ concurrency: true, prefetch: true, pollInterval: true, workflows: true });

/** The option names of `retention`. */
export const RETENTION_OPTION_NAMES = optionNames<RetentionOptions>({ runs: true, activity: true, keys: true });
