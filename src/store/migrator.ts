import type { DataSource, MigrationInterface, QueryRunner } from 'typeorm';
import { durableMigrations } from '../../migrations';

/** The schema and its `migrations` table, made when missing. */
const bookkeeping = (schema: string): string[] => [
  `CREATE SCHEMA IF NOT EXISTS "${schema}"`,
  `CREATE TABLE IF NOT EXISTS "${schema}".migrations (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`,
];
const appliedSql = (schema: string) => `SELECT name FROM "${schema}".migrations`;
const recordSql = (schema: string) => `INSERT INTO "${schema}".migrations (name) VALUES ($1)`;

/**
 * Applies the module's pending migrations in one transaction. A transaction-scoped advisory lock
 * (released at commit, so safe behind PgBouncer in transaction mode) makes nodes that boot at the
 * same moment wait for the first one instead of racing on `CREATE`.
 */
export async function runMigrations(dataSource: DataSource, schema: string, limit = Infinity): Promise<string[]> {
  const runner = dataSource.createQueryRunner();
  const applied: string[] = [];
  try {
    await runner.startTransaction();
    await runner.query(`SELECT pg_advisory_xact_lock(hashtext($1))`, [`nestjs-durable:migrate:${schema}`]);
    for (const statement of bookkeeping(schema)) await runner.query(statement);
    const done = new Set<string>(((await runner.query(appliedSql(schema))) as { name: string }[]).map((r) => r.name));
    for (const Migration of durableMigrations(schema)) {
      const migration: MigrationInterface = new Migration();
      const name = migration.name ?? Migration.name;
      if (done.has(name)) continue;
      if (applied.length >= limit) break;
      await migration.up(runner);
      await runner.query(recordSql(schema), [name]);
      applied.push(name);
    }
    await runner.commitTransaction();
    return applied;
  } catch (err) {
    if (runner.isTransactionActive) await runner.rollbackTransaction().catch(() => undefined);
    throw err;
  } finally {
    await runner.release();
  }
}

/** One pending migration and the statements it would run. */
export interface PendingMigration {
  name: string;
  statements: string[];
}

/**
 * The module's migrations not yet applied to `schema`, each with the statements it would run,
 * without writing anything: the applied ones are read (when the schema has them), and each
 * pending migration runs against a runner that only records its statements.
 */
export async function pendingMigrations(dataSource: DataSource, schema: string): Promise<PendingMigration[]> {
  const [{ exists }] = (await dataSource.query(`SELECT to_regclass($1) IS NOT NULL AS exists`, [`"${schema}".migrations`])) as { exists: boolean }[];
  const done = new Set<string>(exists ? ((await dataSource.query(appliedSql(schema))) as { name: string }[]).map((r) => r.name) : []);
  const pending: PendingMigration[] = exists ? [] : [{ name: 'schema', statements: bookkeeping(schema) }];
  for (const Migration of durableMigrations(schema)) {
    const migration: MigrationInterface = new Migration();
    const name = migration.name ?? Migration.name;
    if (done.has(name)) continue;
    const statements: string[] = [];
    const recorder = { query: async (text: string) => void statements.push(text.trim()) } as unknown as QueryRunner;
    await migration.up(recorder);
    statements.push(recordSql(schema).replace('$1', `'${name}'`));
    pending.push({ name, statements });
  }
  return pending;
}

/** `CREATE [UNIQUE] INDEX IF NOT EXISTS <name> ON <rest>`, as the migrations write their indexes. */
const INDEX_STATEMENT = /^CREATE (UNIQUE )?INDEX IF NOT EXISTS (\w+) ON (.+)$/s;

/** SQLSTATEs of an index whose table or column a pending migration has not made yet. */
const NOT_THERE_YET = new Set(['42P01', '42703', '42704', '3F000']);

/** The index statements of the pending migrations, as `CREATE INDEX CONCURRENTLY` (see {@link buildIndexesConcurrently}). */
export function concurrentIndexStatements(pending: PendingMigration[]): { index: string; statement: string }[] {
  return pending.flatMap((m) =>
    m.statements.flatMap((st) => {
      const match = INDEX_STATEMENT.exec(st);
      return match ? [{ index: match[2], statement: `CREATE ${match[1] ?? ''}INDEX CONCURRENTLY IF NOT EXISTS ${match[2]} ON ${match[3]}` }] : [];
    }),
  );
}

/**
 * `migrate --concurrently`: applies the pending migrations one at a time, each in its own
 * transaction, and before each builds its indexes with `CREATE INDEX CONCURRENTLY` — outside any
 * transaction and without a statement timeout, so writes to the table go on while it builds (each
 * build waits for the transactions already open on it). The migration then finds them built
 * (`IF NOT EXISTS`) and holds its locks only briefly. An index on a table or column that the same
 * migration creates is left to it; an invalid index left by an interrupted build is dropped and
 * built again. Returns the indexes built concurrently and the migrations applied. `transactionPooler`:
 * behind a pooler in transaction mode no session setting is made (it would stay on a server
 * connection other clients get): the builds run under the role's own `statement_timeout`.
 */
export async function migrateConcurrently(
  dataSource: DataSource,
  schema: string,
  options: { transactionPooler?: boolean } = {},
): Promise<{ built: string[]; applied: string[] }> {
  const out = { built: [] as string[], applied: [] as string[] };
  for (;;) {
    const [next] = await pendingMigrations(dataSource, schema);
    if (!next) return out;
    out.built.push(...(await buildConcurrently(dataSource, schema, concurrentIndexStatements([next]), options.transactionPooler === true)));
    const applied = await runMigrations(dataSource, schema, 1);
    if (applied.length === 0) return out; // only the bookkeeping was pending
    out.applied.push(...applied);
  }
}

async function buildConcurrently(
  dataSource: DataSource,
  schema: string,
  statements: { index: string; statement: string }[],
  transactionPooler: boolean,
): Promise<string[]> {
  if (statements.length === 0) return [];
  const runner = dataSource.createQueryRunner();
  const built: string[] = [];
  try {
    if (!transactionPooler) await runner.query(`SET statement_timeout = 0`);
    for (const { index, statement } of statements) {
      const [leftover] = (await runner.query(
        `SELECT NOT i.indisvalid AS invalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
         JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relname = $2`,
        [schema, index],
      )) as { invalid: boolean }[];
      if (leftover && !leftover.invalid) continue;
      if (leftover) await runner.query(`DROP INDEX CONCURRENTLY IF EXISTS "${schema}".${index}`);
      try {
        await runner.query(statement);
        built.push(index);
      } catch (err) {
        if (NOT_THERE_YET.has((err as { code?: string }).code ?? '')) continue;
        await runner.query(`DROP INDEX CONCURRENTLY IF EXISTS "${schema}".${index}`).catch(() => undefined);
        throw err;
      }
    }
    return built;
  } finally {
    if (!transactionPooler) await runner.query(`RESET statement_timeout`).catch(() => undefined);
    await runner.release();
  }
}
