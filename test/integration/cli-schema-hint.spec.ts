/**
 * A CLI command against a schema without the module's tables (the default `durable` when the app
 * uses another `schema`, or a schema not migrated yet) names the schema it read and both ways out:
 * `--schema` for the app's schema, `migrate` for an unmigrated one. Migrating on the hint alone
 * would make an empty schema beside the app's.
 */
import { freshSchema } from '../support';
import { cli, expectError } from '../support/cli';

describe('nestjs-durable on a schema without the module’s tables', () => {
  it.each(['status', 'runs list'])('%s names the schema and points at --schema and migrate', async (command) => {
    const schema = freshSchema();
    const r = await cli([...command.split(' '), '--schema', schema]);
    expectError(r, 1, '42P01');
    expect(r.stderr).toContain(`schema "${schema}" has no tables of the module`);
    expect(r.stderr).toContain('--schema');
    expect(r.stderr).toContain('nestjs-durable migrate');
  });
});
