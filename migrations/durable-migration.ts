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

  abstract up(q: QueryRunner): Promise<void>;
  abstract down(q: QueryRunner): Promise<void>;
}
