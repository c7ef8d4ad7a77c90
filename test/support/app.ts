import { DynamicModule, INestApplication, LoggerService, Provider, Type } from '@nestjs/common';
import { Test, TestingModule } from '@nestjs/testing';
import { DurableModule, DurableService } from '../../src';
import { databaseUrl, freshSchema } from './db';
import { currentScope } from './phase';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyOptions = Record<string, any>;

export interface AppSpec {
  /** Workflow classes, registered as providers of the root test module. */
  workflows?: Type<unknown>[];
  providers?: Provider[];
  /** Extra modules (e.g. a feature module holding workflows). */
  imports?: Array<Type<unknown> | DynamicModule>;
  /** Defaults to a fresh schema. Pass the same schema to several apps to make them nodes of one cluster. */
  schema?: string;
  /** Worker concurrency (default 5). */
  concurrency?: number;
  /** Merged over the test defaults; `worker` is merged field by field unless it is `false`. */
  options?: AnyOptions;
  /** Use forRootAsync with a factory returning the options (optionally with imports/inject). */
  async?: boolean | { imports?: Array<Type<unknown> | DynamicModule>; inject?: unknown[]; useFactory?: (...args: unknown[]) => unknown };
  /** Replaces the DurableModule import entirely (for option-validation tests). */
  durableModule?: DynamicModule;
  /** Serve HTTP: the Nest application is set up by this (global prefix, global guards, …) before init; see `TestApp.server`. */
  http?: (app: INestApplication) => void;
  /** The app's logger (default: silent unless DURABLE_TEST_LOGS=1), e.g. a {@link RecordingLogger}. */
  logger?: LoggerService;
}

export interface TestApp {
  app: TestingModule;
  durable: DurableService;
  schema: string;
  options: AnyOptions;
  get<T>(token: Type<T> | string | symbol): T;
  close(): Promise<void>;
  /** The HTTP server, with `spec.http` (for supertest). */
  server?: ReturnType<INestApplication['getHttpServer']>;
}

const openApps: { app: TestApp; scope: 'test' | 'file' }[] = [];

const verbose = process.env.DURABLE_TEST_LOGS === '1';

/** Nest logger for tests: silent unless DURABLE_TEST_LOGS=1. */
class TestLogger implements LoggerService {
  log(...args: unknown[]) {
    if (verbose) console.log(...args);
  }
  error(...args: unknown[]) {
    if (verbose) console.error(...args);
  }
  warn(...args: unknown[]) {
    if (verbose) console.warn(...args);
  }
  debug() {}
  verbose() {}
}

/** One call of a {@link RecordingLogger}: the level and the arguments Nest's Logger passed. */
export interface LogEntry {
  level: 'log' | 'error' | 'warn' | 'debug' | 'verbose' | 'fatal';
  message: string;
  /** Every argument after the message (for `error`: the stack, then the context). */
  rest: unknown[];
}

/** A Nest logger that records every call (all levels, debug included), for tests of what is logged. */
export class RecordingLogger implements LoggerService {
  readonly entries: LogEntry[] = [];
  private readonly recorder =
    (level: LogEntry['level']) =>
    (message: unknown, ...rest: unknown[]): void => {
      this.entries.push({ level, message: String(message), rest });
    };
  readonly log = this.recorder('log');
  readonly error = this.recorder('error');
  readonly warn = this.recorder('warn');
  readonly debug = this.recorder('debug');
  readonly verbose = this.recorder('verbose');
  readonly fatal = this.recorder('fatal');

  /** The entries of `level` whose message contains `text`. */
  find(level: LogEntry['level'], text: string): LogEntry[] {
    return this.entries.filter((e) => e.level === level && e.message.includes(text));
  }
}

/** The options createApp passes to DurableModule (fast timings for tests). */
export function testOptions(spec: AppSpec = {}, schema = spec.schema ?? freshSchema()): AnyOptions {
  const base: AnyOptions = {
    url: databaseUrl(),
    schema,
    worker: { pollInterval: '100ms', concurrency: spec.concurrency ?? 5 },
    heartbeatInterval: '200ms',
    nodeTimeout: '1s',
    shutdownTimeout: '3s',
  };
  const extra = spec.options ?? {};
  const merged: AnyOptions = { ...base, ...extra };
  if (extra.worker === false) merged.worker = false;
  else if (extra.worker && typeof extra.worker === 'object') merged.worker = { ...base.worker, ...extra.worker };
  // `dataSource` given → drop the default url (exactly one of the two)
  if ('dataSource' in extra && !('url' in extra)) delete merged.url;
  for (const k of Object.keys(merged)) if (merged[k] === undefined) delete merged[k];
  return merged;
}

/**
 * Builds and initialises a Nest application context with DurableModule and the given workflows.
 * Apps still open when a test ends are closed by test/support/setup-after-env.ts.
 */
export async function createApp(spec: AppSpec = {}): Promise<TestApp> {
  const schema = spec.schema ?? freshSchema();
  const options = testOptions(spec, schema);
  let durableModule: DynamicModule;
  if (spec.durableModule) durableModule = spec.durableModule;
  else if (spec.async) {
    const a = typeof spec.async === 'object' ? spec.async : {};
    durableModule = DurableModule.forRootAsync({
      imports: a.imports as never,
      inject: a.inject as never,
      useFactory: (a.useFactory ?? (() => options)) as never,
    });
  } else durableModule = DurableModule.forRoot(options as never);

  let moduleRef: TestingModule | undefined;
  let nest: INestApplication | undefined;
  try {
    moduleRef = await Test.createTestingModule({
      imports: [durableModule, ...(spec.imports ?? [])],
      providers: [...(spec.workflows ?? []), ...(spec.providers ?? [])],
    })
      .setLogger(spec.logger ?? new TestLogger())
      .compile();
    if (spec.http) {
      nest = moduleRef.createNestApplication({ logger: spec.logger ?? new TestLogger() });
      spec.http(nest);
      await nest.init();
    } else await moduleRef.init();
  } catch (err) {
    if (nest) await nest.close().catch(() => undefined);
    else if (moduleRef) await moduleRef.close().catch(() => undefined);
    throw err;
  }
  const app = moduleRef;
  let closed: Promise<void> | undefined;
  const testApp: TestApp = {
    app,
    durable: app.get(DurableService),
    schema,
    options,
    get: (token) => app.get(token as never),
    server: nest?.getHttpServer(),
    close: () => {
      if (!closed) {
        closed = nest ? nest.close() : app.close();
        const i = openApps.findIndex((o) => o.app === testApp);
        if (i >= 0) openApps.splice(i, 1);
      }
      return closed;
    },
  };
  openApps.push({ app: testApp, scope: currentScope() });
  return testApp;
}

/** Closes the apps still open (newest first): the current test's (`'test'`) or all (`'all'`). */
export async function closeAllApps(which: 'test' | 'all' = 'all'): Promise<void> {
  const apps: TestApp[] = [];
  for (let i = openApps.length - 1; i >= 0; i--) {
    if (which === 'all' || openApps[i].scope === 'test') apps.push(openApps.splice(i, 1)[0].app);
  }
  for (const a of apps) {
    // A close that hangs is a bug (the drain tests assert on it); here it must not stall the suite.
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), CLOSE_TIMEOUT_MS);
    });
    const outcome = await Promise.race([
      a.close().then(
        () => 'closed' as const,
        () => 'closed' as const,
      ),
      timedOut,
    ]);
    clearTimeout(timer);
    if (outcome === 'timeout') {
      process.stderr.write(`[test support] app on schema ${a.schema} did not close within ${CLOSE_TIMEOUT_MS} ms\n`);
    }
  }
}

const CLOSE_TIMEOUT_MS = 8_000;
