import type { DataSource, MigrationInterface } from 'typeorm';
import { durableMigrations } from '../../migrations';

/**
 * Applies the module's pending migrations in one transaction. A transaction-scoped advisory lock
 * (released at commit, so safe behind PgBouncer in transaction mode) makes nodes that boot at the
 * same moment wait for the first one instead of racing on `CREATE`.
 */
export async function runMigrations(dataSource: DataSource, schema: string): Promise<string[]> {
  const runner = dataSource.createQueryRunner();
  const applied: string[] = [];
  try {
    await runner.startTransaction();
    await runner.query(`SELECT pg_advisory_xact_lock(hashtext($1))`, [`nestjs-durable:migrate:${schema}`]);
    await runner.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
    await runner.query(`CREATE TABLE IF NOT EXISTS "${schema}".migrations (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`);
    const done = new Set<string>(((await runner.query(`SELECT name FROM "${schema}".migrations`)) as { name: string }[]).map((r) => r.name));
    for (const Migration of durableMigrations(schema)) {
      const migration: MigrationInterface = new Migration();
      const name = migration.name ?? Migration.name;
      if (done.has(name)) continue;
      await migration.up(runner);
      await runner.query(`INSERT INTO "${schema}".migrations (name) VALUES ($1)`, [name]);
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
