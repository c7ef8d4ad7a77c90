/**
 * `nestjs-durable migrate --concurrently`: the pending migrations' indexes are built with
 * CREATE INDEX CONCURRENTLY before the migrations run, so writes to a big table go on while an
 * index builds. Shown on a real schema whose key index migration is pending, with a transaction
 * open on `runs` that the build has to wait for; then on pending migrations that add columns and
 * index them.
 */
import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { databaseUrl, freshSchema, ident, sql, waitForLockWait } from '../support';
import { cli } from '../support/cli';

const insertRun = (schema: string) => `INSERT INTO ${ident(schema)}.runs (id, workflow) VALUES ('${randomUUID()}', 'mc_plain')`;

describe('migrate --concurrently', () => {
  it('builds a pending migration’s index without blocking writes, then applies the migration', async () => {
    const schema = freshSchema();
    expect((await cli(['migrate', '--schema', schema])).code).toBe(0);
    // the key index migration is pending again, on a table with rows
    await sql(`DROP INDEX ${ident(schema)}.runs_key`);
    await sql(`DELETE FROM ${ident(schema)}.migrations WHERE name = 'DurableKeyIndex1733040005000'`);
    await sql(insertRun(schema));

    const printed = JSON.parse((await cli(['migrate', '--print-sql', '--concurrently', '--schema', schema, '--json'])).stdout);
    expect(printed.concurrently).toEqual([
      expect.stringMatching(new RegExp(`^CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS runs_key ON "${schema}"\\.runs `)),
    ]);
    expect(printed.pending.map((m: { name: string }) => m.name)).toEqual(['DurableKeyIndex1733040005000']);

    const open = new Client({ connectionString: databaseUrl() });
    const writer = new Client({ connectionString: databaseUrl() });
    await Promise.all([open.connect(), writer.connect()]);
    try {
      await open.query('BEGIN');
      await open.query(insertRun(schema)); // a write in flight when the build starts: it waits for it
      const migrating = cli(['migrate', '--concurrently', '--schema', schema, '--json']);
      await waitForLockWait(['CREATE UNIQUE INDEX CONCURRENTLY', 'runs_key'], 'the build waits for the open transaction');
      // meanwhile other writes go through (a plain CREATE INDEX would hold them behind its lock)
      await writer.query(`SET statement_timeout = '10s'`);
      for (let i = 0; i < 5; i++) await writer.query(insertRun(schema));
      await open.query('COMMIT');
      const done = await migrating;
      expect(done.code).toBe(0);
      expect(JSON.parse(done.stdout)).toEqual({ schema, builtConcurrently: ['runs_key'], applied: ['DurableKeyIndex1733040005000'] });
    } finally {
      await Promise.all([open.end(), writer.end()]);
    }
    const [index] = await sql(
      `SELECT i.indisvalid AS valid, i.indisunique AS "unique" FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
       JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relname = 'runs_key'`,
      [schema],
    );
    expect(index).toEqual({ valid: true, unique: true });
    expect(await sql(`SELECT count(*)::int AS n FROM ${ident(schema)}.runs`)).toEqual([{ n: 7 }]);
    expect(JSON.parse((await cli(['migrate', '--print-sql', '--concurrently', '--schema', schema, '--json'])).stdout)).toEqual({
      schema,
      concurrently: [],
      pending: [],
    });
  });

  it('applies the migrations one by one: indexes on columns an earlier pending migration adds are built concurrently too', async () => {
    const schema = freshSchema();
    expect((await cli(['migrate', '--schema', schema])).code).toBe(0);
    // back to before the queue controls: their columns, indexes and records gone
    const s = ident(schema);
    await sql(`DROP INDEX ${s}.runs_pending_priority, ${s}.runs_group_open, ${s}.runs_group_started, ${s}.runs_group_started_all`);
    await sql(`ALTER TABLE ${s}.runs DROP COLUMN priority, DROP COLUMN progress, DROP COLUMN group_key`);
    await sql(`DELETE FROM ${s}.migrations WHERE name IN ('DurableQueueControls1733040012000', 'DurableQueueControlIndexes1733040014000')`);
    await sql(insertRun(schema));
    const done = await cli(['migrate', '--concurrently', '--schema', schema, '--json']);
    expect(done.code).toBe(0);
    expect(JSON.parse(done.stdout)).toEqual({
      schema,
      builtConcurrently: ['runs_pending_priority', 'runs_group_open', 'runs_group_running', 'runs_group_started', 'runs_group_started_all'],
      applied: ['DurableQueueControls1733040012000', 'DurableQueueControlIndexes1733040014000'],
    });
    const invalid = await sql(
      `SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_namespace n ON n.oid = c.relnamespace
       WHERE n.nspname = $1 AND NOT i.indisvalid`,
      [schema],
    );
    expect(invalid).toEqual([]);
  });

  it('the key statistics migration: its runs index is built concurrently, its activity index by the migration over the columns it adds', async () => {
    const schema = freshSchema();
    expect((await cli(['migrate', '--schema', schema])).code).toBe(0);
    const s = ident(schema);
    // back to before the key statistics (and the index that later replaced its runs index)
    await sql(`DROP INDEX ${s}.runs_key_holders, ${s}.activity_key_stats`);
    await sql(`ALTER TABLE ${s}.activity DROP COLUMN outcome, DROP COLUMN input_changed`);
    await sql(`DELETE FROM ${s}.migrations WHERE name IN ('DurableKeyStats1733040018000', 'DurableKeyHoldersIndex1733040039000')`);
    // a record written before the migration: its columns are computed from its details
    await sql(`INSERT INTO ${s}.activity (kind, workflow, key, details) VALUES ('key_duplicate', 'mc_plain', 'k', $1)`, [
      { workflow: 'mc_plain', key: 'k', outcome: 'useExisting', inputChanged: true },
    ]);
    const done = await cli(['migrate', '--concurrently', '--schema', schema, '--json']);
    expect(done.code).toBe(0);
    expect(JSON.parse(done.stdout)).toEqual({
      schema,
      builtConcurrently: ['runs_key_held', 'runs_key_holders'],
      applied: ['DurableKeyStats1733040018000', 'DurableKeyHoldersIndex1733040039000'],
    });
    expect(await sql(`SELECT outcome, input_changed FROM ${s}.activity`)).toEqual([{ outcome: 'useExisting', input_changed: true }]);
    const indexes = await sql(
      `SELECT c.relname AS name, i.indisvalid AS valid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
       JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relname IN ('runs_key_held', 'runs_key_holders', 'activity_key_stats') ORDER BY 1`,
      [schema],
    );
    // the replaced index built, then dropped by the migration that replaces it
    expect(indexes).toEqual([
      { name: 'activity_key_stats', valid: true },
      { name: 'runs_key_holders', valid: true },
    ]);
  });
});
