import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { plainToInstance } from 'class-transformer';
import { validateSync, ValidationError } from 'class-validator';
import { DataSource, type EntityManager } from 'typeorm';
import { DurableValidationError } from '../errors';
import { DurableModuleOptions } from './durable-options.interface';
import { DurableOptionsDto } from './durable-options.dto';
import { toMs } from '../domain/duration';
import { unknownOptionProblems } from '../domain/validation';
import { MODULE_OPTION_NAMES, RETENTION_OPTION_NAMES, WORKER_OPTION_NAMES } from './option-names';

/** Module options with every default applied and every duration in milliseconds. */
export interface ResolvedOptions {
  dataSource?: DataSource;
  url?: string;
  schema: string;
  migrationsRun: boolean;
  worker: false | { concurrency: number; prefetch: number; pollIntervalMs: number; workflows?: string[] };
  nodeId: string;
  heartbeatMs: number;
  nodeTimeoutMs: number;
  retention: { runsMs: number | false; activityMs: number; keysMs?: number };
  shutdownTimeoutMs: number;
  activityCommit: 'synchronous' | 'asynchronous';
  /** In milliseconds; undefined: none. */
  statementTimeoutMs?: number;
  lockTimeoutMs?: number;
  /** In milliseconds; undefined: as `statementTimeout`, a second past it (none without one). */
  connectTimeoutMs?: number;
  keepAlive: boolean;
  transactionPooler: boolean;
  /** The ambient transaction's manager, if the app gave a way to find it. */
  transactionManager?: () => EntityManager | undefined;
}

/** Flattens class-validator errors to `path: message` lines. */
export function describeValidation(errors: ValidationError[], prefix = ''): string[] {
  return errors.flatMap((e) => {
    const path = prefix ? `${prefix}.${e.property}` : e.property;
    const own = Object.values(e.constraints ?? {}).map((m) => `${path}: ${m}`);
    return [...own, ...describeValidation(e.children ?? [], path)];
  });
}

/** What is wrong with the module's connection options (`dataSource` or `url`, exactly one), if anything. */
function connectionOptionProblem(raw: DurableModuleOptions, dataSource: unknown, url: unknown): string | undefined {
  if (dataSource && url) return 'dataSource/url: give one of `dataSource` and `url`, not both';
  if (dataSource || url) return undefined;
  if (url === '') return undefined; // the option's own check says it is empty
  // `url: process.env.DATABASE_URL` with the variable unset is the usual way to get here
  if ('url' in raw) return `url: is ${String(url)} (an environment variable that is not set?): give a PostgreSQL connection string, or \`dataSource\``;
  return 'dataSource/url: give `url` (a PostgreSQL connection string) or `dataSource` (your TypeORM DataSource)';
}

/** Validates the module options (naming each bad option) and applies the defaults (docs/configuration.md). */
export function resolveOptions(raw: DurableModuleOptions): ResolvedOptions {
  const { dataSource, transactionManager, ...plain } = raw ?? {};
  const dto = plainToInstance(DurableOptionsDto, plain);
  // an unknown (e.g. misspelt) option is refused by name, with the nearest known one
  const unknown = [
    ...unknownOptionProblems(raw, MODULE_OPTION_NAMES),
    ...unknownOptionProblems(plain.worker, WORKER_OPTION_NAMES, 'worker.'),
    ...unknownOptionProblems(plain.retention, RETENTION_OPTION_NAMES, 'retention.'),
  ];
  const errors = [...unknown, ...validateSync(dto, { forbidUnknownValues: false, whitelist: true, validationError: { target: false } })];
  const problems = unknown.map((e) => Object.values(e.constraints ?? {}).join('; ')).concat(describeValidation(errors.slice(unknown.length)));
  const connectionProblem = connectionOptionProblem(raw ?? {}, dataSource, plain.url);
  if (connectionProblem) problems.push(connectionProblem);
  if (dataSource && !(dataSource instanceof DataSource) && typeof (dataSource as DataSource).query !== 'function') {
    problems.push('dataSource: must be a TypeORM DataSource');
  }
  if (dataSource && dataSource.options?.type !== 'postgres') problems.push('dataSource: must be a postgres DataSource');
  if (transactionManager !== undefined && typeof transactionManager !== 'function') {
    problems.push('transactionManager: must be a function returning the EntityManager of the ambient transaction (or undefined)');
  }
  const invalid = () => new DurableValidationError(`DurableModule options are invalid:\n  - ${problems.join('\n  - ')}`, errors);
  if (problems.length) throw invalid();
  const heartbeatMs = toMs(plain.heartbeatInterval ?? '5s');
  const nodeTimeoutMs = toMs(plain.nodeTimeout ?? '30s');
  // a node fences itself after three quarters of nodeTimeout without a beat: beats must come well within
  // that (an app without a worker never beats; its nodeTimeout only says which nodes are alive)
  if (plain.worker !== false && heartbeatMs * 2 > nodeTimeoutMs) {
    problems.push('heartbeatInterval: must be at most half of nodeTimeout (a node that has not beaten for three quarters of nodeTimeout stops its runs)');
    throw invalid();
  }
  const worker = plain.worker === false ? false : (plain.worker ?? {});
  return {
    dataSource,
    url: plain.url,
    schema: plain.schema ?? 'durable',
    migrationsRun: plain.migrationsRun ?? true,
    worker:
      worker === false
        ? false
        : {
            concurrency: worker.concurrency ?? 10,
            prefetch: worker.prefetch ?? 1000,
            pollIntervalMs: toMs(worker.pollInterval ?? '1s'),
            workflows: worker.workflows,
          },
    nodeId: plain.nodeId ?? `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`,
    heartbeatMs,
    nodeTimeoutMs,
    retention: {
      runsMs: plain.retention?.runs === false ? false : toMs(plain.retention?.runs ?? '30d'),
      activityMs: toMs(plain.retention?.activity ?? '7d'),
      keysMs: plain.retention?.keys === undefined ? undefined : toMs(plain.retention.keys),
    },
    shutdownTimeoutMs: toMs(plain.shutdownTimeout ?? '30s'),
    activityCommit: plain.activityCommit ?? 'synchronous',
    statementTimeoutMs: plain.statementTimeout === false ? undefined : toMs(plain.statementTimeout ?? '30s'),
    lockTimeoutMs: plain.lockTimeout === undefined ? undefined : toMs(plain.lockTimeout),
    connectTimeoutMs: plain.connectTimeout === undefined ? undefined : toMs(plain.connectTimeout),
    keepAlive: plain.keepAlive ?? true,
    transactionPooler: plain.transactionPooler ?? false,
    transactionManager,
  };
}
