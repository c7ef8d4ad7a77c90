import { DataSource } from 'typeorm';
import { durableMigrations } from '../../migrations';
import { databaseUrl, freshSchema, sql } from './db';

/** A table's indexes whose definition contains `fragment` (all of them when omitted): name → definition. */
export type IndexDefs = Map<string, string>;

/** What {@link migrationRoundTrip} saw: the indexes before the migration and after each of its steps. */
export interface RoundTrip {
  before: IndexDefs;
  up: IndexDefs;
  down: IndexDefs;
  /** After a second up. */
  again: IndexDefs;
  /** After a third up over the upgraded schema (a migration is re-runnable). */
  twice: IndexDefs;
}

/**
 * On a fresh schema, applies every migration before the one whose class name starts with `name`,
 * then that one up, down, up and up again, reading `table`'s indexes (those whose definition
 * contains `fragment`) before it and after each step.
 */
export async function migrationRoundTrip(name: string, table: string, fragment = ''): Promise<RoundTrip> {
  const schema = freshSchema();
  const all = durableMigrations(schema);
  const at = all.findIndex((M) => M.name.startsWith(name));
  if (at <= 0) throw new Error(`no migration ${name} after the first`);
  // the fragment is looked for here, not in the query: there, the definition of every index of the
  // database could be computed, and one that another test drops meanwhile fails the query
  const indexes = async (): Promise<IndexDefs> =>
    new Map(
      (
        await sql<{ indexname: string; indexdef: string }>(`select indexname, indexdef from pg_indexes where schemaname = $1 and tablename = $2`, [
          schema,
          table,
        ])
      )
        .filter((r) => r.indexdef.includes(fragment))
        .map((r) => [r.indexname, r.indexdef]),
    );
  const ds = new DataSource({ type: 'postgres', url: databaseUrl() });
  await ds.initialize();
  const runner = ds.createQueryRunner();
  try {
    for (const M of all.slice(0, at)) await new M().up(runner);
    const M = all[at];
    const before = await indexes();
    await new M().up(runner);
    const up = await indexes();
    await new M().down(runner);
    const down = await indexes();
    await new M().up(runner);
    const again = await indexes();
    await new M().up(runner);
    return { before, up, down, again, twice: await indexes() };
  } finally {
    await runner.release();
    await ds.destroy();
  }
}
