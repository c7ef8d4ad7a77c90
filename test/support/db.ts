import { randomBytes } from 'crypto';
import { Pool, QueryResultRow } from 'pg';

/** The test database (set by test/global-setup.js or by the caller). */
export function databaseUrl(): string {
  const url = process.env.DATABASE_URL;
  if (!url) throw new Error('DATABASE_URL is not set: run the tests through jest (global setup provides it)');
  return url;
}

const createdSchemas = new Set<string>();

/** A schema name nobody else uses: `t_<random>`. Each test gets its own, so files can run in parallel. */
export function freshSchema(prefix = 't'): string {
  const name = `${prefix}_${randomBytes(6).toString('hex')}`;
  createdSchemas.add(name);
  return name;
}

/** Schemas handed out by freshSchema() in this test file (dropped after the file). */
export function schemasCreated(): string[] {
  return [...createdSchemas];
}

let pool: Pool | undefined;

/** A raw pg pool on the test database, for asserting on tables directly. */
export function db(): Pool {
  if (!pool) {
    pool = new Pool({ connectionString: databaseUrl(), max: 4 });
    pool.on('error', () => undefined);
  }
  return pool;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- rows of any statement
export async function sql<R extends QueryResultRow = any>(text: string, params: unknown[] = []): Promise<R[]> {
  return (await db().query<R>(text, params)).rows;
}

/** Validated identifier (our own schema names only), quoted. */
export function ident(name: string): string {
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`not a test identifier: ${name}`);
  return `"${name}"`;
}

/** Number of rows in `<schema>.runs` (0 when the table does not exist yet). */
export async function countRuns(schema: string, where = 'true', params: unknown[] = []): Promise<number> {
  const exists = await tableExists(schema, 'runs');
  if (!exists) return 0;
  const rows = await sql<{ n: string }>(`select count(*)::text as n from ${ident(schema)}.runs where ${where}`, params);
  return Number(rows[0].n);
}

export async function tableExists(schema: string, table: string): Promise<boolean> {
  const rows = await sql(`select 1 from information_schema.tables where table_schema = $1 and table_name = $2`, [schema, table]);
  return rows.length > 0;
}

export async function columnsOf(schema: string, table: string): Promise<string[]> {
  const rows = await sql<{ column_name: string }>(
    `select column_name from information_schema.columns where table_schema = $1 and table_name = $2 order by ordinal_position`,
    [schema, table],
  );
  return rows.map((r) => r.column_name);
}

export async function dropSchemas(): Promise<void> {
  if (process.env.DURABLE_TEST_KEEP_SCHEMAS === '1') return;
  const names = [...createdSchemas];
  createdSchemas.clear();
  for (const name of names) {
    await db()
      .query(`drop schema if exists ${ident(name)} cascade`)
      .catch(() => undefined);
  }
}

export async function closeDb(): Promise<void> {
  const p = pool;
  pool = undefined;
  if (p) await p.end().catch(() => undefined);
}
