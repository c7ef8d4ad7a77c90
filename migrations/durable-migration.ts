import type { MigrationInterface, QueryRunner } from 'typeorm';

/** An index of a migration: its name and the rest of its `CREATE INDEX … ON <table>` (columns, predicate). */
export type IndexDefinition = [name: string, definition: string];

/** Base of the module's migrations: bound to a schema (a validated identifier), SQL inside. */
export abstract class DurableMigration implements MigrationInterface {
  abstract name: string;

  constructor(protected readonly schema = 'durable') {}

  /** The quoted schema. */
  protected get s(): string {
    return `"${this.schema}"`;
  }

  /** The channel the workers LISTEN on. */
  protected get channel(): string {
    return `durable_${this.schema}`;
  }

  /** Creates indexes on `runs` (`[name, definition]`), re-runnably (`migrate --concurrently` builds them first). */
  protected async createRunsIndexes(q: QueryRunner, indexes: IndexDefinition[]): Promise<void> {
    await this.createIndexes(q, 'runs', indexes);
  }

  /** Creates indexes on `table` (`[name, definition]`), re-runnably (`migrate --concurrently` builds them first). */
  protected async createIndexes(q: QueryRunner, table: string, indexes: IndexDefinition[]): Promise<void> {
    for (const [name, definition] of indexes) await q.query(`CREATE INDEX IF NOT EXISTS ${name} ON ${this.s}.${table} ${definition}`);
  }

  /** Drops the indexes {@link createRunsIndexes} made, in reverse order. */
  protected async dropIndexes(q: QueryRunner, indexes: IndexDefinition[]): Promise<void> {
    for (const [name] of [...indexes].reverse()) await q.query(`DROP INDEX IF EXISTS ${this.s}.${name}`);
  }

  abstract up(q: QueryRunner): Promise<void>;
  abstract down(q: QueryRunner): Promise<void>;
}

/**
 * A migration that adds indexes to one table, replacing others if any: `up` builds the new ones
 * (so reads have them before the old go) and drops those they replace; `down` the reverse.
 */
export abstract class IndexSwapMigration extends DurableMigration {
  /** The table the indexes are on. */
  protected abstract readonly table: string;
  /** The indexes built by `up` (and by `migrate --concurrently` first). */
  protected abstract readonly indexes: IndexDefinition[];
  /** The indexes they replace, dropped by `up` and built again by `down` (none unless set). */
  protected readonly replaced: IndexDefinition[] = [];

  async up(q: QueryRunner): Promise<void> {
    await this.createIndexes(q, this.table, this.indexes);
    await this.dropIndexes(q, this.replaced);
  }

  async down(q: QueryRunner): Promise<void> {
    await this.createIndexes(q, this.table, this.replaced);
    await this.dropIndexes(q, this.indexes);
  }
}
