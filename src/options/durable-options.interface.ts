import type { DataSource, EntityManager } from 'typeorm';
import type { Duration } from '../domain/duration';

/** Options of the node's worker; `worker: false` makes a node that only starts runs. */
export interface WorkerOptions {
  /** Step bodies executed at once on this node (its slots: a run holds one only while a step's body runs). Default 10. */
  concurrency?: number;
  /**
   * Most runs claimed ahead of the free slots (they wait on this node under its lease). The worker
   * claims ahead only what it will start within ~100 ms at its recent pace, up to this. Default 1000.
   */
  prefetch?: number;
  /** How often an idle worker looks for due runs when no notification arrives. Default `'1s'`. */
  pollInterval?: Duration;
  /** Only run these workflows on this node (default: all registered). */
  workflows?: string[];
}

/** Retention of finished runs and of the activity log. */
export interface RetentionOptions {
  /** Finished runs older than this are pruned; `false` keeps them. Default `'30d'`. */
  runs?: Duration | false;
  /** Activity events older than this are pruned. Default `'7d'`. */
  activity?: Duration;
  /**
   * The key horizon. Unset (default): pruning a run that holds its key frees the key. Set: a pruned
   * run whose key its workflow's `reuse` keeps (every finished run under `'never'`, a completed one
   * under `'afterFailure'`) leaves a tombstone — its payloads and history deleted, its row kept with
   * `prunedAt` set — that keeps the key taken until this long after the run finished.
   */
  keys?: Duration;
}

/** Options of `DurableModule.forRoot()`; each is described in docs/configuration.md. */
export interface DurableModuleOptions {
  /** The app's own TypeORM DataSource (Postgres). Exactly one of `dataSource` and `url`. */
  dataSource?: DataSource;
  /** A Postgres connection string; the module makes its own DataSource. */
  url?: string;
  /** Postgres schema holding the module's tables. Default `'durable'`. */
  schema?: string;
  /** Apply the module's migrations at startup (safe when several nodes boot at once). Default true. */
  migrationsRun?: boolean;
  /** Worker settings, or `false` for a node that only starts runs. */
  worker?: false | WorkerOptions;
  /** This node's id. Default `<host>-<pid>-<random>`. */
  nodeId?: string;
  /** How often the node proves it is alive and looks for cancelled runs. Default `'5s'`. */
  heartbeatInterval?: Duration;
  /** A node silent this long is dead; its runs go back to pending. Default `'30s'`. */
  nodeTimeout?: Duration;
  /** Pruning of finished runs and activity. */
  retention?: RetentionOptions;
  /** On shutdown: stop claiming, let running steps finish for this long, then release them. Default `'30s'`. */
  shutdownTimeout?: Duration;
  /**
   * How a start answered as a duplicate (`useExisting`, `error`) commits the only thing it writes,
   * its `key_duplicate` activity record. `'synchronous'` (default) waits for the WAL flush like
   * every other write; `'asynchronous'` commits that transaction with `synchronous_commit = off`:
   * a duplicate then costs no flush, and a Postgres crash (not an app crash) within ~3×
   * `wal_writer_delay` may lose those records (so a re-add count) — never a run, key or input.
   * A start inside the caller's transaction (`manager`) always commits as the caller does.
   */
  activityCommit?: 'synchronous' | 'asynchronous';
  /**
   * Longest any statement of the module may run before Postgres cancels it (a hung claim or
   * heartbeat then fails, is logged, and is tried again). Applied to the pool the module makes from
   * `url` (a node's heartbeat connection has its own, a third of `nodeTimeout`). With `dataSource`, set the
   * pool's `extra.statement_timeout` yourself. Default `'30s'`; `false` for none.
   */
  statementTimeout?: Duration | false;
  /** Longest a statement of the module waits for a lock (as `statementTimeout`). Default: none. */
  lockTimeout?: Duration;
  /**
   * Longest the module waits for the database to answer a new connection (pg's
   * `connectionTimeoutMillis`) before it gives up with a `ConnectTimeoutError` (`code: 'ETIMEDOUT'`):
   * a host that never answers fails the boot instead of hanging it (and later, a call that needs a
   * new connection). Applied to the module's own connections, as `statementTimeout`. pg bounds by
   * it a wait for a free connection of the pool too: a `ConnectTimeoutError` with `pool: true`.
   * Default: a second past `statementTimeout` (`'31s'`); none with `statementTimeout: false`.
   */
  connectTimeout?: Duration;
  /** TCP keep-alive on the module's own connections, so a dead peer is noticed. Default true. */
  keepAlive?: boolean;
  /**
   * The connection goes through a pooler in transaction mode (PgBouncer `pool_mode = transaction`):
   * no named prepared statements, no LISTEN (new runs are found by polling every
   * `worker.pollInterval`, logged once at startup) and no session settings. Default false.
   */
  transactionPooler?: boolean;
  /**
   * The ambient transaction: called by `start`, `startMany`, `startFlow`, `sendEvent` and `rerun`
   * when they are given no `manager`; when it returns the `EntityManager` of an open transaction, they join
   * it (written at its commit, gone at its rollback), else they run on their own. E.g.
   * `() => txHost.tx` with `@nestjs-cls/transactional`. Default: none.
   */
  transactionManager?: () => EntityManager | undefined;
}
