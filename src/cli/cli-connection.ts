import type { INestApplicationContext } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { ConnectTimeoutError } from '../errors';
import type { Db } from '../store/db';
import { OverviewStore } from '../store/overview.store';
import type { RunsStore } from '../store/runs.store';
import type { DurableService } from '../durable.service';
import type { QueueControls } from '../runs/queue-controls';
import type { KeyInsights } from '../runs/key-insights';
import type { RunEvents } from '../runs/run-events';
import type { DefinitionsStore } from '../store/definitions.store';

/** The option that sets how long a command waits for a connection. */
const CONNECT_TIMEOUT_OPTION = '--connect-timeout';

/** Where the CLI connects: a database URL and the module's schema. */
export interface CliTarget {
  url: string;
  schema: string;
  /** The cluster's `nodeTimeout` in ms, which tells a live node (default: the module's). */
  nodeTimeoutMs?: number;
  /** How long to wait for the database to answer a connection, in ms (none: the module's `connectTimeout` default, and pg's for `migrate`). */
  connectTimeoutMs?: number;
  /** The URL is a pooler in transaction mode: the module's `transactionPooler` (no session settings, no named statements). */
  transactionPooler?: boolean;
}

/**
 * The CLI's way into a database: the module itself (no worker, no migrations, no workflows), so
 * every command goes through `DurableService` and applies its rules; or, for `migrate`, a bare
 * DataSource. Made on first use, closed by {@link close}. Nest, TypeORM and the module are loaded
 * then too: help and usage errors answer without waiting for them.
 */
export class CliConnection {
  private app?: INestApplicationContext;
  private bare?: DataSource;

  constructor(readonly target: CliTarget) {}

  /** `DurableService` on the target schema. */
  async durable(): Promise<DurableService> {
    const { DurableService } = await import('../durable.service');
    return (await this.context()).get(DurableService);
  }

  /** Pausing and resuming workflows on the target schema. */
  async controls(): Promise<QueueControls> {
    const { QueueControls } = await import('../runs/queue-controls');
    return (await this.context()).get(QueueControls, { strict: false });
  }

  /** Events and input sent to runs on the target schema, with what the engine did with each (`provideInput`'s outcome too). */
  async events(): Promise<RunEvents> {
    const { RunEvents } = await import('../runs/run-events');
    return (await this.context()).get(RunEvents, { strict: false });
  }

  /** The reads of keys, with `explainStored` (the definitions the database holds), on the target schema. */
  async insights(): Promise<KeyInsights> {
    const { KeyInsights } = await import('../runs/key-insights');
    return (await this.context()).get(KeyInsights, { strict: false });
  }

  /**
   * The module's connection, its runs store, the stored workflow definitions and the overview
   * reads on the target schema.
   */
  async overview(): Promise<{ db: Db; runs: RunsStore; definitions: DefinitionsStore; store: OverviewStore }> {
    const app = await this.context();
    const [{ DurableConnection }, { RunsStore }, { DefinitionsStore }] = await Promise.all([
      import('../core/durable.connection'),
      import('../store/runs.store'),
      import('../store/definitions.store'),
    ]);
    const { db } = app.get(DurableConnection, { strict: false });
    return {
      db,
      runs: app.get(RunsStore, { strict: false }),
      definitions: app.get(DefinitionsStore, { strict: false }),
      store: new OverviewStore(this.target.schema),
    };
  }

  /** A DataSource of its own (for migrations: the module would apply them when it starts). */
  async dataSource(): Promise<DataSource> {
    const [{ createDataSource }, { isConnectTimeout }] = await Promise.all([import('../store/typeorm-adapter'), import('../store/db')]);
    const { connectTimeoutMs } = this.target;
    this.bare ??= await createDataSource(this.target.url, connectTimeoutMs === undefined ? undefined : { connectionTimeoutMillis: connectTimeoutMs })
      .initialize()
      .catch((err: unknown) => {
        throw connectTimeoutMs !== undefined && isConnectTimeout(err) ? new ConnectTimeoutError(connectTimeoutMs, CONNECT_TIMEOUT_OPTION) : err;
      });
    return this.bare;
  }

  async close(): Promise<void> {
    await this.app?.close();
    if (this.bare?.isInitialized) await this.bare.destroy();
  }

  /**
   * `err` as the command tells it: the module's `ConnectTimeoutError` (at its boot, or later on a
   * connection of its pool) names `--connect-timeout`, which set the module's `connectTimeout`.
   */
  told(err: unknown): unknown {
    return err instanceof ConnectTimeoutError ? new ConnectTimeoutError(err.timeoutMs, CONNECT_TIMEOUT_OPTION, err.pool) : err;
  }

  /**
   * The module on the target, made on first use. Its own pool waits `connectTimeoutMs` for a
   * connection: a host that never answers fails the command with a `ConnectTimeoutError`
   * (`ETIMEDOUT`; {@link told} names `--connect-timeout`), instead of hanging it.
   */
  private async context(): Promise<INestApplicationContext> {
    const [{ NestFactory }, { DurableModule }] = await Promise.all([import('@nestjs/core'), import('../durable.module')]);
    this.app ??= await NestFactory.createApplicationContext(
      DurableModule.forRoot({
        url: this.target.url,
        schema: this.target.schema,
        nodeTimeout: this.target.nodeTimeoutMs,
        connectTimeout: this.target.connectTimeoutMs,
        transactionPooler: this.target.transactionPooler,
        worker: false,
        migrationsRun: false,
      }),
      { logger: false, abortOnError: false },
    );
    return this.app;
  }
}
