/**
 * The operator CLI's bad values: a run id that is not one, an empty or oversized name, key, reason
 * or `by`, a cursor that is not one. Each is bad usage (exit 2, `error usage:` naming the argument
 * or option), found before a connection is opened: the URL below points nowhere, so a command that
 * connected would fail with ECONNREFUSED instead.
 */
import { cli, expectError } from '../support/cli';

jest.setTimeout(120_000);

const nowhere = ['--url', 'postgres://nobody@127.0.0.1:1/none'];
const RUN = '0193a4f2-8c1e-7b7d-9d4e-2f6a1c3b5e70';

describe('nestjs-durable: bad values are bad usage, before connecting', () => {
  it.each([
    [['runs', 'get', 'nope'], '<id> must be a run id (a UUID), got "nope"'],
    [['runs', 'history', '42'], '<id> must be a run id (a UUID), got "42"'],
    [['runs', 'cancel', 'nope'], '<id> must be a run id (a UUID)'],
    [['runs', 'retry', `${RUN}x`], '<id> must be a run id (a UUID)'],
    [['runs', 'release-key', 'nope'], '<id> must be a run id (a UUID)'],
    [['runs', 'provide-input', 'nope', 'decision', 'true'], '<id> must be a run id (a UUID)'],
    [['runs', 'send-event', 'nope', 'go'], '<id> must be a run id (a UUID)'],
    [['runs', 'provide-input', RUN, '', 'true'], '<name> must be a string of 1 to 255 bytes'],
    [['runs', 'send-event', RUN, 'x'.repeat(256)], '<name> must be a string of 1 to 255 bytes'],
    [['runs', 'cancel', RUN, '--reason', ''], '--reason must be a string of 1 to 1000 bytes'],
    [['runs', 'cancel', RUN, '--reason', 'x'.repeat(1001)], '--reason must be a string of 1 to 1000 bytes'],
    [['runs', 'release-key', RUN, '--by', ''], '--by must be a string of 1 to 255 bytes'],
    [['runs', 'list', '--workflow', ''], '--workflow must be a workflow name (a non-empty string)'],
    [['runs', 'list', '--key', ''], '--key must be 1 to 255 bytes of UTF-8'],
    [['runs', 'list', '--key', 'k'.repeat(256)], '--key must be 1 to 255 bytes of UTF-8'],
    [['keys', 'list', '--cursor', 'garbage'], '--cursor must be a run id (a UUID), got "garbage"'],
    [['keys', 'list', '--workflow', 'w', '--cursor', ''], '--cursor must be 1 to 255 bytes of UTF-8'],
    [['keys', 'list', '--workflow', ''], '--workflow must be a workflow name (a non-empty string)'],
    [['activity', '--run', 'nope'], '--run must be a run id (a UUID), got "nope"'],
    [['activity', '--key', ''], '--key must be 1 to 255 bytes of UTF-8'],
    [['activity', '--workflow', ''], '--workflow must be a workflow name (a non-empty string)'],
    [['activity', '--kind', ''], '--kind must be one of'],
    [['workflows', 'pause', ''], '<name> must be a workflow name (a non-empty string)'],
    [['keys', 'explain', '', 'k'], '<workflow> must be a workflow name (a non-empty string)'],
    [['flows', 'rerun', 'f1', '--from', ''], '--from must be a string of 1 to 255 bytes'],
  ])('%j', async (args, message) => {
    const r = await cli([...args, ...nowhere]);
    expectError(r, 2, 'usage');
    expect(r.stderr).toContain(message);
  });

  it.each([
    [['runs', 'list', '--colour'], 'runs list has no option --colour'],
    [['runs', 'list', '--colour', 'red'], 'runs list has no option --colour'],
    [['runs', 'cancel', '--jsn', RUN], 'runs cancel has no option --jsn'],
    [['runs', 'list', '--jsn', '--limit', '5'], 'runs list has no option --jsn'],
    [['runs', 'get', RUN, '--limit', '5'], 'runs get has no option --limit'],
    [['runs', 'list', '--limit'], '--limit needs a value'],
    [['runs', 'list', '--workflow', '--json'], '--workflow needs a value'],
  ])('an unknown option is named as such, wherever it stands: %j', async (args, message) => {
    const r = await cli([...args, ...nowhere]);
    expectError(r, 2, 'usage');
    expect(r.stderr.trim()).toBe(`error usage: ${message}`);
  });

  it('a bad key is told as the CLI takes it: the option or argument, its bytes and the value, with no word of null (which only the API can pass)', async () => {
    for (const [args, what] of [
      [['runs', 'list', '--key', ''], '--key'],
      [['activity', '--key', ''], '--key'],
      [['keys', 'list', '--workflow', 'w', '--cursor', ''], '--cursor'],
      [['keys', 'explain', 'w', ''], '<key>'],
    ] as const) {
      const r = await cli([...args, ...nowhere]);
      expectError(r, 2, 'usage');
      expect(r.stderr.trim()).toBe(`error usage: ${what} must be 1 to 255 bytes of UTF-8 (got 0), got ""`);
    }
  });

  it('activity --kind takes the kinds the log holds: a misspelt one is bad usage, not an empty log', async () => {
    const r = await cli(['activity', '--kind', 'key_relased', ...nowhere]);
    expectError(r, 2, 'usage');
    expect(r.stderr).toContain('--kind must be one of key_duplicate, key_handed_off, key_released, key_retaken, dashboard_action, got "key_relased"');
    for (const kind of ['key_duplicate', 'key_handed_off', 'key_released', 'key_retaken', 'dashboard_action']) {
      expectError(await cli(['activity', '--kind', kind, ...nowhere]), 1, 'ECONNREFUSED');
    }
  });

  it('flows rerun shows its required --from <node> in its usage, as docs/cli.md does, and refuses a line without it', async () => {
    const help = await cli(['flows', 'rerun', '--help'], { DATABASE_URL: '' });
    expect(help.stdout.split('\n')[0]).toBe('usage: nestjs-durable flows rerun <id> --from <node> [options]');
    expect((await cli(['--help'], { DATABASE_URL: '' })).stdout).toMatch(/^ {2}nestjs-durable flows rerun <id> --from <node> +runs a node/m);
    const r = await cli(['flows', 'rerun', 'f1', ...nowhere]);
    expectError(r, 2, 'usage');
    expect(r.stderr).toContain('flows rerun needs --from <node>');
  });

  it('a database URL that is not a postgres URL is bad usage naming where it came from, without echoing it', async () => {
    for (const [args, env, from] of [
      [['--url', 'notaurl'], {}, '--url'],
      [['--url', 'mysql://root:s3cret@db/app'], {}, '--url'],
      [[], { DATABASE_URL: 'db.internal:5432/app' }, 'DATABASE_URL'],
    ] as const) {
      const r = await cli(['runs', 'list', ...args], env);
      expectError(r, 2, 'usage');
      expect(r.stderr).toContain(`${from} must be a postgres:// or postgresql:// URL`);
      expect(r.stderr).not.toContain('s3cret');
    }
    expectError(await cli(['runs', 'list', '--url', 'postgresql://nobody@127.0.0.1:1/none']), 1, 'ECONNREFUSED');
  });

  it('good values pass the checks and reach the database (here: nowhere)', async () => {
    for (const args of [
      ['runs', 'get', RUN],
      ['runs', 'cancel', RUN, '--reason', 'stuck since 03:00'],
      ['runs', 'send-event', RUN.toUpperCase(), 'go', '{"ok":true}'],
      ['keys', 'list', '--cursor', RUN, '--workflow', 'w'],
      ['activity', '--run', RUN, '--key', 'k', '--kind', 'key_released'],
    ]) {
      expectError(await cli([...args, ...nowhere]), 1, 'ECONNREFUSED');
    }
  });
});
