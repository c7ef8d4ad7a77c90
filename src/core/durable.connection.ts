import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import type { DataSource, EntityManager } from 'typeorm';
import { MAX_TIMER_MS } from '../domain/duration';
import { WorkflowExplorer } from '../definition/workflow.explorer';
import type { ResolvedOptions } from '../options/resolve-options';
import { ConnectTimeoutError, DurableValidationError, NotReadyError } from '../errors';
import { assertValid, managerProblem, problem } from '../domain/validation';
import { definitionRecord } from '../definition/definition-record';
import { WorkflowRegistry } from '../definition/workflow.registry';
import { bounded, type Statements } from '../store/bounded-queryable';
import { databaseOf, Db, isConnectTimeout, sqlState, transactionOf, UNDEFINED_TABLE, type DatabaseIdentity, type Queryable } from '../store/db';
import { DefinitionsStore } from '../store/definitions.store';
import { createDataSource, pgPoolOf } from '../store/typeorm-adapter';
import { runMigrations } from '../store/migrator';
import { LOG_CONTEXT, RESOLVED_OPTIONS } from './durable.constants';

/**
 * How long this side waits for an answer or a connection: a second past `statementTimeout`, within
 * what a Node.js timer can wait (a longer one would fire at once).
 */
function clientBound(statementTimeoutMs: number | undefined): number | undefined {
  return statementTimeoutMs === undefined ? undefined : Math.min(MAX_TIMER_MS, statementTimeoutMs + 1_000);
}

/**
 * The module's connection to Postgres: the app's DataSource (or one of its own, from `url`) and its
 * `pg` pool as a {@link Db}. At module init it first discovers the workflows (so that a bad
 * definition fails the boot before any connection is opened), then connects, applies the
 * migrations and writes this node's workflow definitions (see `writeDefinitions`). A DataSource it
 * made itself is closed last at shutdown, after the worker drained.
 */
@Injectable()
export class DurableConnection implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(LOG_CONTEXT);
  dataSource: DataSource;
  private connected?: Db;
  /** The database of each DataSource a caller's transaction came from, and the module's own (see `transactionOf`). */
  private readonly databases = new WeakMap<DataSource, DatabaseIdentity>();
  private ownDatabase?: DatabaseIdentity;
  private ownsDataSource = false;

  constructor(
    @Inject(RESOLVED_OPTIONS) private readonly options: ResolvedOptions,
    private readonly explorer: WorkflowExplorer,
    private readonly registry: WorkflowRegistry,
    private readonly definitions: DefinitionsStore,
  ) {}

  async onModuleInit(): Promise<void> {
    this.explorer.explore();
    const { options } = this;
    this.dataSource = options.dataSource ?? createDataSource(options.url, this.sessionSettings());
    if (!this.dataSource.isInitialized) {
      await this.dataSource.initialize().catch((err: unknown) => {
        throw !options.dataSource && isConnectTimeout(err) ? this.connectTimeoutError() : err;
      });
      this.ownsDataSource = !options.dataSource;
    }
    // behind a transaction pooler a named statement may reach a server connection that never prepared it
    // a statement whose answer never comes (a dead connection) fails a second after statementTimeout
    const clientTimeoutMs = clientBound(options.statementTimeoutMs);
    // a connection of its own pool not answered in time, at any time, is told as at boot, and so is
    // one not had from the pool in time (with the app's DataSource, the pool and its timeout are
    // the app's: pg's errors are left as they are)
    const connectTimeout = this.ownsDataSource ? (pool: boolean) => this.connectTimeoutError(pool) : undefined;
    this.connected = new Db(pgPoolOf(this.dataSource), !options.transactionPooler, clientTimeoutMs, connectTimeout);
    if (options.migrationsRun) {
      const applied = await runMigrations(this.dataSource, options.schema);
      if (applied.length) this.logger.log(`applied migrations ${applied.join(', ')} to schema "${options.schema}"`);
    }
    await this.writeDefinitions();
  }

  /**
   * Writes the key rules and steps of this node's workflows to `workflow_definitions`, in one
   * statement, over what another node wrote under the same names (the last node to boot wins), for
   * the commands that have no definitions (the CLI's `keys explain`). None to write (the CLI's own
   * module): nothing is written. A schema not migrated this far is warned about, not fatal.
   */
  private async writeDefinitions(): Promise<void> {
    const records = this.registry.names().map((name) => definitionRecord(this.registry.get(name)));
    if (records.length === 0) return;
    try {
      await this.definitions.write(this.db, this.options.nodeId, records);
    } catch (err) {
      if (sqlState(err) !== UNDEFINED_TABLE) throw err;
      this.logger.warn(
        "workflow definitions not written: the schema lacks the table workflow_definitions (run the module's migrations, DurableWorkflowDefinitions1733040016000)",
      );
    }
  }

  /** The module's database access; `NotReadyError` before the app initialised. */
  get db(): Db {
    if (!this.connected) throw new NotReadyError('DurableService');
    return this.connected;
  }

  /**
   * Where maintenance (the pass, the flows' repairs) sends its statements: the pool, whose
   * connections carry the module's `statementTimeout`; without one, each statement under a statement
   * timeout of `nodeTimeout`, and behind a transaction pooler (no session settings there) under
   * `statementTimeout`, else `nodeTimeout`, set in its own transaction. A statement waiting for a lock
   * would otherwise hold the pass, and every later one, for as long as the lock is held, while the
   * heartbeat renews the lease: no run timed out, no dead node recovered in the cluster (and a
   * client-side timeout alone leaves its backend waiting on the server). Bounded, it fails, is
   * logged, and the next pass begins again.
   */
  get maintenanceDb(): Statements {
    const { statementTimeoutMs, nodeTimeoutMs, transactionPooler } = this.options;
    if (statementTimeoutMs === undefined || transactionPooler) return bounded(this.db, statementTimeoutMs ?? nodeTimeoutMs);
    return this.db;
  }

  /**
   * The transaction a start or a send (`what`) joins, as a {@link Queryable}: the caller's
   * `manager`, which must be the EntityManager of an open transaction, else the ambient one (module
   * option `transactionManager`) when it is in a transaction, else none. A `DurableValidationError`
   * for any other `manager`, or for a transaction on another database than the module's (a run
   * written there would never be seen by the module).
   */
  async join(manager: EntityManager | undefined, what: string): Promise<Queryable | undefined> {
    assertValid(what, [managerProblem(manager)]);
    return this.transactionOf(manager ?? this.options.transactionManager?.());
  }

  /**
   * The open transaction of `manager` as a {@link Queryable}, undefined without one; refused on
   * another database than the module's. What a DataSource's database is, is asked once on the
   * caller's own transaction, then known; on a mismatch both are asked again before refusing (a
   * server restarted or failed over since).
   */
  private async transactionOf(manager: EntityManager | undefined): Promise<Queryable | undefined> {
    const joined = transactionOf(manager);
    const source = manager?.connection;
    if (!joined || !source || source === this.dataSource) return joined;
    let mine = this.ownDatabase;
    let theirs = this.databases.get(source);
    for (const fresh of [false, true]) {
      if (fresh || !theirs) this.databases.set(source, (theirs = await databaseOf(joined)));
      if (fresh || !mine) this.ownDatabase = mine = await databaseOf(this.db);
      if (mine.id === theirs.id) return joined;
    }
    const where = mine!.name === theirs!.name ? `a database "${theirs!.name}" of another server` : `database "${theirs!.name}"`;
    const message = `manager is a transaction on ${where}, not on the module's database "${mine!.name}": a run started there would never be seen by the module`;
    throw new DurableValidationError(message, [problem('manager', undefined, 'sameDatabase', message)]);
  }

  /** Last of the shutdown hooks, so the worker has drained (in `beforeApplicationShutdown`) first. */
  async onApplicationShutdown(): Promise<void> {
    if (this.ownsDataSource && this.dataSource.isInitialized) await this.dataSource.destroy();
  }

  /**
   * The pg settings of the pool (for a node's dedicated connections), with the module's timeouts
   * and keep-alive: the dedicated connections are the module's own even when the pool is the app's.
   */
  connectionConfig(): object {
    return { ...(this.db.pool as unknown as { options: object }).options, ...this.sessionSettings() };
  }

  /** How long a new connection of the module's own may take: `connectTimeout`, else as long as a statement may (none without `statementTimeout`). */
  private connectTimeoutMs(): number | undefined {
    return this.options.connectTimeoutMs ?? clientBound(this.options.statementTimeoutMs);
  }

  /** The error of a connection of the module's own that the database did not answer in time (`pool`: not had from its pool in time). */
  private connectTimeoutError(pool = false): ConnectTimeoutError {
    const setBy = this.options.connectTimeoutMs === undefined ? 'connectTimeout, by default a second past statementTimeout' : 'connectTimeout';
    return new ConnectTimeoutError(this.connectTimeoutMs()!, setBy, pool);
  }

  /**
   * The module's connect, statement and lock timeouts and keep-alive, as pg connection settings (no
   * session settings behind a transaction pooler).
   */
  private sessionSettings(): Record<string, number | boolean> {
    const { statementTimeoutMs, lockTimeoutMs, keepAlive, transactionPooler } = this.options;
    const connectMs = this.connectTimeoutMs();
    const connect: Record<string, number> = connectMs === undefined ? {} : { connectionTimeoutMillis: connectMs };
    if (transactionPooler) return { keepAlive, ...connect };
    return {
      keepAlive,
      ...connect,
      ...(statementTimeoutMs === undefined ? {} : { statement_timeout: statementTimeoutMs }),
      ...(lockTimeoutMs === undefined ? {} : { lock_timeout: lockTimeoutMs }),
    };
  }
}
