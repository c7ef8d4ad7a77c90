/**
 * The CLI's reads write nothing: on a connection where every transaction is read-only (a hot
 * standby, or a role with `default_transaction_read_only`), every read command answers; a command
 * that acts fails with PostgreSQL's own refusal.
 */
import { RunContext, Step, Workflow } from '../../src';
import { createApp, databaseUrl, freshSchema } from '../support';
import { cli, expectError } from '../support/cli';

@Workflow('ro_echo')
class Echo {
  @Step()
  async echo(ctx: RunContext<{ n: number }>) {
    return ctx.input.n;
  }
}

/** The test database, every transaction of the connection read-only. */
const readOnlyUrl = () => {
  const url = new URL(databaseUrl());
  url.searchParams.set('options', '-c default_transaction_read_only=on');
  return url.toString();
};

describe('nestjs-durable on a read-only connection', () => {
  const schema = freshSchema();
  let runId: string;
  let flowId: string;
  const ro = (...args: string[]) => cli([...args, '--schema', schema, '--url', readOnlyUrl()]);

  beforeAll(async () => {
    const app = await createApp({ workflows: [Echo], schema });
    ({ runId } = await app.durable.start(Echo, { n: 1 }, { key: 'ro-1' }));
    await app.durable.waitForRun(runId, { timeout: 10_000 });
    ({ flowId } = await app.durable.startFlow(app.durable.flow().add('a', Echo, { n: 2 })));
  });

  it.each(['status', 'workflows list', 'runs list', 'keys list', 'activity'])('%s answers', async (command) => {
    const r = await ro(...command.split(' '));
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(command === 'activity' ? 'no activity' : 'ro_echo');
  });

  it('runs get, runs history, flows get and keys explain answer', async () => {
    for (const [command, shows] of [
      [['runs', 'get', runId], runId],
      [['runs', 'history', runId], 'completed'],
      [['flows', 'get', flowId], 'ro_echo'],
      [['keys', 'explain', 'ro_echo', 'ro-1'], 'outcome:'],
    ] as const) {
      const r = await ro(...command);
      expect({ command, code: r.code, stderr: r.stderr }).toEqual({ command, code: 0, stderr: '' });
      expect(r.stdout).toContain(shows);
    }
  });

  it('a command that acts is refused by PostgreSQL: the connection is read-only indeed', async () => {
    expectError(await ro('runs', 'release-key', runId), 1, '25006');
  });
});
