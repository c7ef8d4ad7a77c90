import { ConsoleLogger, type DynamicModule, type InjectionToken, type LoggerService, type ModuleMetadata, type Provider } from '@nestjs/common';
import { Test, type TestingModule, type TestingModuleBuilder } from '@nestjs/testing';
import { randomBytes } from 'crypto';
import { Client } from 'pg';
import type { DataSource } from 'typeorm';
import { TimeoutError } from '../errors';
import { MAX_SPAN_MS, toMs, type Duration } from '../domain/duration';
import type { StartResult } from '../domain/run-info';
import { arrayProblem, assertValid, optionNames, optionsObjectProblem, problem } from '../domain/validation';
import { WORKER_OPTION_NAMES } from '../options/option-names';
import { callOptions } from '../domain/call-options';
import { channelOf } from '../core/durable.constants';
import { DurableConnection } from '../core/durable.connection';
import type { DurableModuleOptions, WorkerOptions } from '../options/durable-options.interface';
import { clientQueryable } from '../store/db';
import { TestEnvStore } from '../store/test-env.store';
import { nextTickAfter } from '../schedules/cron';
import { Scheduler } from '../schedules/scheduler';
import { WorkflowRegistry } from '../definition/workflow.registry';
import { workerWorkflows } from '../worker/worker-workflows';
import { DurableModule } from '../durable.module';
import { DurableService } from '../durable.service';
import { testDatabaseUrl } from './test-database';

/** Options of {@link DurableTestEnv.create}. */
export interface DurableTestEnvOptions {
  /** Modules the workflows need (feature modules, TypeORM, …). */
  imports?: ModuleMetadata['imports'];
  /** Workflow classes and the providers they use. */
  providers?: Provider[];
  /** The database; default `DATABASE_URL`, else an embedded PostgreSQL shared by the process. */
  url?: string;
  /**
   * The injection token of a TypeORM `DataSource` that `imports` provide (`DataSource` for
   * `TypeOrmModule.forRoot`'s), for the module to use instead of a pool of its own made from `url`:
   * steps' `ctx.transaction` then know your entities, and starts can join your transactions. It
   * must connect to the env's database (`url`, or `await testDatabaseUrl()`).
   */
  dataSource?: InjectionToken;
  /** The env's worker (default `{ pollInterval: '100ms' }`); `false`: runs are only started. */
  worker?: false | WorkerOptions;
  /** More module options (retention, shutdownTimeout, …); `url`, `schema` and `worker` are the env's. */
  options?: Omit<DurableModuleOptions, 'url' | 'dataSource' | 'schema' | 'worker'>;
  /** Changes the testing module before it compiles, e.g. `(b) => b.overrideProvider(Cms).useValue(fake)`. */
  configure?: (builder: TestingModuleBuilder) => TestingModuleBuilder;
  /** The app's logger (default: errors and warnings only); `false`: silent. */
  logger?: LoggerService | false;
}

/** Options of {@link DurableTestEnv.runUntilIdle}. */
export interface RunUntilIdleOptions {
  /** Longest wait before `TimeoutError` (default `'30s'`). */
  timeout?: Duration;
}

const ENV_OPTION_NAMES = optionNames<DurableTestEnvOptions>({
  imports: true,
  providers: true,
  url: true,
  dataSource: true,
  worker: true,
  options: true,
  configure: true,
  logger: true,
});

/** How often `runUntilIdle` looks at the env's runs. */
const IDLE_POLL_MS = 20;
/** Timings of the env's module: a test notices a node's work quickly. */
const ENV_DEFAULTS: Partial<DurableModuleOptions> = { heartbeatInterval: '500ms', nodeTimeout: '5s', shutdownTimeout: '2s' };

/** A logger that says nothing. */
class SilentLogger implements LoggerService {
  log(): void {}
  error(): void {}
  warn(): void {}
}

/**
 * A Nest application with `DurableModule` on a schema of its own, for testing workflows: runs go
 * until nothing is due ({@link runUntilIdle}), time moves forward on demand ({@link skipTime}), and
 * {@link close} drops the schema. Envs do not see each other's runs, so test files run in parallel.
 */
export class DurableTestEnv {
  private readonly store: TestEnvStore;
  /** How far the env's time was moved forward, in ms (for its schedules' ticks). */
  private skippedMs = 0;
  private closed?: Promise<void>;

  private constructor(
    /** The application context (`env.app.get(MyService)`). */
    readonly app: TestingModule,
    /** The env's `DurableService`. */
    readonly durable: DurableService,
    /** The env's Postgres schema (`durable_test_<random>`). */
    readonly schema: string,
    private readonly url: string,
  ) {
    this.store = new TestEnvStore(schema, channelOf(schema));
  }

  /** Builds and initialises the env's application (migrations applied to a fresh schema). */
  static async create(given?: DurableTestEnvOptions | null): Promise<DurableTestEnv> {
    const options = callOptions('DurableTestEnv.create', given, ENV_OPTION_NAMES);
    // a value of the wrong type would otherwise be spread away (worker: 5) or fail inside Nest
    const absent = (v: unknown) => v === undefined || v === null;
    assertValid('DurableTestEnv.create', [
      absent(options.imports) ? undefined : arrayProblem(options.imports, 'imports'),
      absent(options.providers) ? undefined : arrayProblem(options.providers, 'providers'),
      options.worker === false ? undefined : optionsObjectProblem(options.worker, 'worker', WORKER_OPTION_NAMES),
      absent(options.configure) || typeof options.configure === 'function'
        ? undefined
        : problem('configure', options.configure, 'isFunction', 'configure must be a function of the TestingModuleBuilder'),
    ]);
    const url = await testDatabaseUrl(options.url);
    const schema = `durable_test_${randomBytes(6).toString('hex')}`;
    const worker = options.worker === false ? false : { pollInterval: '100ms', ...options.worker };
    const moduleOptions: DurableModuleOptions = { ...ENV_DEFAULTS, ...options.options, schema, worker };
    const durable: DynamicModule =
      options.dataSource === undefined
        ? DurableModule.forRoot({ ...moduleOptions, url })
        : DurableModule.forRootAsync({
            imports: options.imports,
            inject: [options.dataSource],
            useFactory: (dataSource: DataSource) => ({ ...moduleOptions, dataSource }),
          });
    let builder = Test.createTestingModule({ imports: [durable, ...(options.imports ?? [])], providers: options.providers ?? [] });
    if (options.configure) builder = options.configure(builder);
    builder.setLogger(options.logger === false ? new SilentLogger() : (options.logger ?? new ConsoleLogger({ logLevels: ['error', 'warn'] })));
    const app = await builder.compile();
    // the env's schedules fire as its time is skipped (skipTime) or on demand, not by the real clock
    app.get(Scheduler, { strict: false }).holdTicks();
    try {
      await app.init();
    } catch (err) {
      await app.close().catch(() => undefined);
      await dropSchema(url, schema);
      throw err;
    }
    return new DurableTestEnv(app, app.get(DurableService), schema, url);
  }

  /**
   * Resolves once no run of the env is due, running or compensating (waiting runs whose time has
   * not come, runs whose retry back-off has not passed, and runs held back by their workflow's
   * full rate window or a pause are left: see {@link skipTime}); `TimeoutError` after `timeout`
   * (default 30 s).
   */
  async runUntilIdle(options?: RunUntilIdleOptions | null): Promise<void> {
    const { timeout } = callOptions('runUntilIdle', options, ['timeout']);
    const timeoutMs = toMs(timeout ?? '30s', 'runUntilIdle: timeout');
    const until = Date.now() + timeoutMs;
    const { db } = this.app.get(DurableConnection, { strict: false });
    await this.store.wake(db);
    const { limited } = workerWorkflows(this.app.get(WorkflowRegistry, { strict: false }), undefined);
    for (;;) {
      const going = await this.store.going(db, limited);
      if (going === 0) return;
      if (Date.now() >= until) throw new TimeoutError(`runUntilIdle: ${going} run(s) still due or going after ${timeoutMs}ms`);
      await new Promise((resolve) => setTimeout(resolve, IDLE_POLL_MS));
    }
  }

  /**
   * Moves every not-yet-due time of the env's runs `duration` earlier, in one statement (sleeps,
   * retry back-offs, delays, debounce windows, workflow timeouts, wait timeouts, schedules' next
   * ticks, rate windows), and wakes the worker; a schedule with a tick in the skipped time fires once. Clocks in
   * memory (`Date.now()`, a running step's own timeout) do not move. At most 100 years per call.
   */
  async skipTime(duration: Duration): Promise<void> {
    const ms = toMs(duration, 'skipTime', MAX_SPAN_MS);
    assertValid('skipTime', [ms > 0 ? undefined : problem('duration', duration, 'isPositive', 'skipTime: duration must be more than 0')]);
    const { db } = this.app.get(DurableConnection, { strict: false });
    const from = new Date(Date.now() + this.skippedMs);
    await this.store.skip(db, ms);
    // counted once the times moved: a failed skip leaves the env's time as it was
    this.skippedMs += ms;
    const to = new Date(Date.now() + this.skippedMs);
    for (const schedule of await this.durable.listSchedules()) {
      const tick = nextTickAfter(schedule.cron, schedule.timezone, from);
      if (tick && tick <= to) await this.fireSchedule(schedule.name);
    }
  }

  /** Fires a schedule now, with its key and input (`ScheduleNotFoundError` for an unknown name). */
  fireSchedule(name: string): Promise<StartResult> {
    return this.durable.triggerSchedule(name);
  }

  /** Stops the application (its worker drains) and drops the env's schema. */
  close(): Promise<void> {
    this.closed ??= this.app.close().finally(() => dropSchema(this.url, this.schema));
    return this.closed;
  }
}

/** Drops `schema` on a connection of its own (the app's pool is closed by then). */
async function dropSchema(url: string, schema: string): Promise<void> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    await new TestEnvStore(schema, channelOf(schema)).drop(clientQueryable(client));
  } finally {
    await client.end();
  }
}
