/**
 * The operator CLI (`nestjs-durable`: bin/nestjs-durable.js, which runs dist/src/cli/main.js) spawned as a real process, its
 * usage: the bin itself, the help of every command and group, bad usage (exit 2, before connecting),
 * and a database that cannot be reached or a schema without the module's tables (exit 1). The
 * commands on a schema a test app uses are in cli.spec.ts.
 */
import { freshSchema } from '../support';
import { execFile } from 'child_process';
import { existsSync, readFileSync } from 'fs';
import { join } from 'path';
import { BIN, cliProcess as cli, expectError } from '../support/cli';

// every command is a process of its own: slow on a loaded machine
jest.setTimeout(240_000);

describe('nestjs-durable: usage', () => {
  it('the package bin is an executable file with a node shebang that runs the built CLI', async () => {
    const help = await new Promise<string>((resolve, reject) =>
      execFile(BIN, ['--help'], { timeout: 60_000 }, (err, stdout) => (err ? reject(err) : resolve(stdout))),
    );
    expect(help).toMatch(/runs list/);
  });

  it('help, --version and bad usage answer without loading Nest, TypeORM or pg (only the commands that connect load them)', async () => {
    const runner = join(__dirname, '..', '..', 'dist', 'src', 'cli', 'cli.js');
    // the CLI run in a process of its own as main.js runs it, then every file it had loaded by then
    const script = `require('reflect-metadata');
      require(${JSON.stringify(runner)})
      .runCli(JSON.parse(process.argv[1]), { stdout() {}, stderr() {}, env: {} })
      .then((code) => process.stdout.write(JSON.stringify({ code, files: Object.keys(require.cache) })));`;
    const packageOf = (file: string) => /node_modules[\\/]((?:@[^\\/]+[\\/])?[^\\/]+)/.exec(file)?.[1];
    const heavy = (name: string | undefined) => name !== undefined && /^(?:@nestjs[\\/]|typeorm$|pg$|rxjs$)/.test(name);
    const nowhere = ['--url', 'postgres://nobody@127.0.0.1:1/none'];
    for (const args of [['--help'], ['runs', 'get', '--help'], ['--version'], ['runs', 'get'], ['runs', 'list', '--limit', '0', ...nowhere]]) {
      const stdout = await new Promise<string>((resolve, reject) =>
        execFile(process.execPath, ['-e', script, JSON.stringify(args)], { timeout: 60_000 }, (err, out) => (err ? reject(err) : resolve(out))),
      );
      const { code, files } = JSON.parse(stdout) as { code: number; files: string[] };
      expect({ args, code }).toEqual({ args, code: args.includes('--help') || args.includes('--version') ? 0 : 2 });
      expect({ args, loaded: [...new Set(files.map(packageOf).filter(heavy))] }).toEqual({ args, loaded: [] });
    }
  });

  it('--help lists every command, and each command has its own help', async () => {
    const all = await cli(['--help']);
    expect(all.code).toBe(0);
    const commands = [...all.stdout.matchAll(/^ {2}nestjs-durable ([a-z-]+(?: [a-z-]+)?)/gm)].map((m) => m[1]);
    expect(commands).toEqual([
      'status',
      'runs list',
      'runs get',
      'runs history',
      'runs cancel',
      'runs retry',
      'runs release-key',
      'runs provide-input',
      'runs send-event',
      'flows get',
      'flows rerun',
      'workflows list',
      'workflows pause',
      'workflows resume',
      'keys list',
      'keys explain',
      'activity',
      'migrate',
    ]);
    for (const c of commands) {
      const help = await cli([...c.split(' '), '--help'], { DATABASE_URL: '' });
      expect(help.code).toBe(0);
      expect(help.stdout).toContain(`usage: nestjs-durable ${c}`);
    }
  });

  it('a group with --help lists its commands; a group without a command names them and exits 2', async () => {
    const noDb = { DATABASE_URL: '' };
    const groups: Record<string, string[]> = {
      runs: ['list', 'get', 'history', 'cancel', 'retry', 'release-key', 'provide-input', 'send-event'],
      flows: ['get', 'rerun'],
      workflows: ['list', 'pause', 'resume'],
      keys: ['list', 'explain'],
    };
    for (const [group, commands] of Object.entries(groups)) {
      for (const help of ['--help', '-h']) {
        const r = await cli([group, help], noDb);
        expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
        expect(r.stdout).toContain(`usage: nestjs-durable ${group} <command>`);
        expect([...r.stdout.matchAll(/^ {2}nestjs-durable ([a-z-]+ [a-z-]+)/gm)].map((m) => m[1])).toEqual(commands.map((c) => `${group} ${c}`));
      }
      const bare = await cli([group], noDb);
      expectError(bare, 2, 'usage');
      expect(bare.stderr).toContain(`${group} needs a command: ${commands.join(', ')}`);
    }
    const typo = await cli(['runs', 'lst', '--help'], noDb);
    expectError(typo, 2, 'usage');
    expect(typo.stderr).toContain('unknown command "runs lst": runs has list, get,');
    expectError(await cli(['bogus', '--help'], noDb), 2, 'usage');
    expect((await cli(['--help'], noDb)).stdout).toContain('nestjs-durable <group> --help the commands of a group (runs, flows, workflows, keys)');
  });

  it('bad usage exits 2 with one line naming the problem, before connecting', async () => {
    const noDb = { DATABASE_URL: '' };
    expectError(await cli([], noDb), 2, 'usage');
    expectError(await cli(['runs', 'lst'], noDb), 2, 'usage');
    expectError(await cli(['runs', 'get'], noDb), 2, 'usage');
    expectError(await cli(['runs', 'get', 'a', 'b'], noDb), 2, 'usage');
    expectError(await cli(['runs', 'list', '--colour', 'red'], noDb), 2, 'usage');
    expectError(await cli(['runs', 'list', '--limit'], noDb), 2, 'usage');
    expectError(await cli(['runs', 'list'], noDb), 2, 'usage'); // no database
    // checked before the connection is opened: the URL points nowhere
    const nowhere = ['--url', 'postgres://nobody@127.0.0.1:1/none'];
    expectError(await cli(['runs', 'list', '--status', 'done', ...nowhere]), 2, 'usage');
    expectError(await cli(['runs', 'list', '--limit', '0', ...nowhere]), 2, 'usage');
    expectError(await cli(['runs', 'provide-input', 'x', 'decision', '{nope', ...nowhere]), 2, 'usage');
    expectError(await cli(['status', '--node-timeout', 'soon', ...nowhere]), 2, 'usage');
    expectError(await cli(['migrate', '--print-sql', '--schema', 'x"; DROP SCHEMA public; --', ...nowhere]), 2, 'usage');
    expectError(await cli(['runs', 'list', '--node-timeout', '30s', ...nowhere]), 2, 'usage'); // status only
  });

  it('a flag value out of range, or a number not in decimal digits, exits 2 naming the flag, before connecting', async () => {
    const nowhere = ['--url', 'postgres://nobody@127.0.0.1:1/none'];
    for (const value of ['99999999999d', '2147483648', '10ms']) {
      const r = await cli(['status', '--node-timeout', value, ...nowhere]);
      expectError(r, 2, 'usage');
      expect(r.stderr).toMatch(/--node-timeout must be a duration such as '30s' or '2m', from 20ms to 2147483647ms/);
    }
    const limits = [
      ...['0x10', '1e2', '16.0', ' 16', '0b1'].map((v) => ['runs', 'list', '--limit', v]),
      ['keys', 'list', '--limit', '0x10'],
      ['activity', '--limit', '0x10'],
    ];
    for (const args of limits) {
      const r = await cli([...args, ...nowhere]);
      expectError(r, 2, 'usage');
      expect(r.stderr).toMatch(/--limit must be a whole number from 1 to 1000/);
    }
  });

  it('--version prints the version in package.json and exits 0, whatever else the line holds', async () => {
    // the library's package.json: the repository's (the compatibility pass runs a copy of the tests
    // under a package.json of its own, below the repository's)
    const packageAt = (dir: string): { name?: string; version?: string } =>
      existsSync(join(dir, 'package.json')) ? JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) : {};
    let dir = join(__dirname, '..', '..');
    while (packageAt(dir).name !== 'nestjs-durable') dir = join(dir, '..');
    const { version } = packageAt(dir);
    expect(version).toMatch(/^\d+\.\d+\.\d+/);
    for (const args of [['--version'], ['runs', 'list', '--version'], ['--version', '--help']]) {
      expect(await cli(args, { DATABASE_URL: '' })).toEqual({ code: 0, stdout: `${version}\n`, stderr: '' });
    }
    const help = await cli(['--help'], { DATABASE_URL: '' });
    expect(help.stdout).toMatch(/^ {2}--version +print the version of nestjs-durable$/m);
    expectError(await cli(['--version=1'], { DATABASE_URL: '' }), 2, 'usage');
  });

  it('an option given twice is bad usage naming it, before connecting (a help asked twice is still a help)', async () => {
    const nowhere = 'postgres://nobody@127.0.0.1:1/none';
    const twice: [string[], string][] = [
      [['runs', 'list', '--key', 'a', '--key', 'b'], '--key is given more than once: runs list takes it once'],
      [['runs', 'list', '--limit=5', '--limit', '6'], '--limit is given more than once: runs list takes it once'],
      [['runs', 'list', '--json', '--json', '--json'], '--json is given more than once: runs list takes it once'],
      [['status', '--url', nowhere], '--url is given more than once: status takes it once'],
      [['migrate', '--schema', 'a', '--print-sql', '--schema', 'b', '--print-sql'], '--schema is given more than once: migrate takes it once'],
    ];
    for (const [args, message] of twice) {
      const r = await cli([...args, '--url', nowhere]);
      expectError(r, 2, 'usage');
      expect(r.stderr.trim()).toBe(`error usage: ${message}`);
    }
    // a misspelt option is named first: it explains the rest
    expect((await cli(['runs', 'list', '--jsn', '--json', '--json', '--url', nowhere])).stderr).toContain('runs list has no option --jsn');
    const help = await cli(['runs', 'list', '-h', '--help'], { DATABASE_URL: '' });
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('usage: nestjs-durable runs list');
    expect((await cli(['--help'], { DATABASE_URL: '' })).stdout).toContain('An option is given once: twice is bad usage.');
  });

  it('a database that cannot be reached fails with exit 1 and its error code', async () => {
    expectError(await cli(['runs', 'list', '--url', 'postgres://nobody@127.0.0.1:1/none']), 1, 'ECONNREFUSED');
  });

  it('a schema without the module’s tables says so', async () => {
    const r = await cli(['runs', 'list', '--schema', freshSchema()]);
    expectError(r, 1, '42P01');
    expect(r.stderr).toContain('migrate');
  });
});
