import type { MigrationInterface, QueryRunner } from 'typeorm';

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
  protected async createRunsIndexes(q: QueryRunner, indexes: [name: string, definition: string][]): Promise<void> {
    for (const [name, definition] of indexes) await q.query(`CREATE INDEX IF NOT EXISTS ${name} ON ${this.s}.runs ${definition}`);
  }

  /** Drops the indexes {@link createRunsIndexes} made, in reverse order. */
  protected async dropIndexes(q: QueryRunner, indexes: [name: string, definition: string][]): Promise<void> {
    for (const [name] of [...indexes].reverse()) await q.query(`DROP INDEX IF EXISTS ${this.s}.${name}`);
  }

  abstract up(q: QueryRunner): Promise<void>;
  abstract down(q: QueryRunner): Promise<void>;
}
