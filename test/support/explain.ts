/** Counting what a statement's plan reads, for tests that a read stays bounded. */
import { Client } from 'pg';
import type { Queryable } from '../../src/store/db';
import { databaseUrl } from './db';

/** A node of an `EXPLAIN (FORMAT JSON)` plan. */
export interface PlanNode {
  'Relation Name'?: string;
  'Actual Rows': number;
  'Actual Loops': number;
  'Rows Removed by Filter'?: number;
  'Rows Removed by Index Recheck'?: number;
  Plans?: PlanNode[];
}

/** Rows the scans of `table` in `plan` read (returned, or removed by a filter or an index recheck), over all their loops. */
export function rowsRead(plan: PlanNode, table: string): number {
  const own =
    plan['Relation Name'] === table
      ? (plan['Actual Rows'] + (plan['Rows Removed by Filter'] ?? 0) + (plan['Rows Removed by Index Recheck'] ?? 0)) * plan['Actual Loops']
      : 0;
  return own + (plan.Plans ?? []).reduce((sum, p) => sum + rowsRead(p, table), 0);
}

/**
 * A store's `Queryable` on `client` that runs each statement under `EXPLAIN ANALYZE`, tells `onRead`
 * how many rows its scans of `table` read, then runs it again for its rows.
 */
export function explainingQueryable(client: Client, table: string, onRead: (rows: number) => void): Queryable {
  return {
    query: async (text: string, values?: unknown[]) => {
      const { rows } = await client.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${text}`, values);
      onRead(rowsRead((rows[0]['QUERY PLAN'] as { Plan: PlanNode }[])[0].Plan, table));
      return (await client.query(text, values)).rows;
    },
  } as Queryable;
}

/**
 * Runs `work` with the app's module connection (`DurableConnection.db`) answering through
 * {@link explainingQueryable} on a connection of its own (transaction control and ANALYZE run as
 * they are): the rows the scans of `table` read, by each statement `work` sent, in order.
 */
export async function rowsReadEach(connection: object, table: string, work: () => Promise<unknown>): Promise<number[]> {
  const client = new Client({ connectionString: databaseUrl() });
  await client.connect();
  const read: number[] = [];
  const explaining = explainingQueryable(client, table, (rows) => read.push(rows));
  const queryable = {
    query: (text: string, values?: unknown[]) =>
      /^\s*(BEGIN|COMMIT|ROLLBACK|SAVEPOINT|RELEASE|ANALYZE|SET)\b/i.test(text)
        ? client.query(text, values).then((r) => r.rows)
        : explaining.query(text, values),
  } as Queryable;
  Object.defineProperty(connection, 'db', { get: () => queryable, configurable: true });
  try {
    await work();
  } finally {
    delete (connection as { db?: unknown }).db;
    await client.end();
  }
  return read;
}

/** {@link rowsReadEach} summed: the rows the scans of `table` read, over every statement `work` sent. */
export async function rowsReadBy(connection: object, table: string, work: () => Promise<unknown>): Promise<number> {
  return (await rowsReadEach(connection, table, work)).reduce((sum, n) => sum + n, 0);
}

/** What `work` resolved to, with {@link rowsReadEach} of it: the rows the scans of `table` read, by each statement `work` sent. */
export async function valueAndRowsRead<T>(connection: object, table: string, work: () => Promise<T>): Promise<{ value: T; read: number[] }> {
  let value!: T;
  const read = await rowsReadEach(connection, table, async () => {
    value = await work();
  });
  return { value, read };
}
