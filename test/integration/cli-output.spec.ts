/**
 * What the operator CLI prints for people and pipes: a table keeps one line per row whatever its
 * cells hold (a key or an error message with a line break is escaped), and a reader that stops
 * early (`nestjs-durable runs list --json | head`) ends the command quietly, not with a stack trace.
 */
import { spawn } from 'child_process';
import { RunContext, Step, Workflow } from '../../src';
import { createApp, freshSchema, TestApp } from '../support';
import { BIN, cli } from '../support/cli';
import { databaseUrl } from '../support/db';

@Workflow('cli_out_echo')
class Echo {
  @Step()
  async echo(ctx: RunContext<{ pad?: string }>) {
    return ctx.input.pad ?? null;
  }
}

@Workflow('cli_out_fail', { retry: { attempts: 1 } })
class Fail {
  @Step()
  async run() {
    throw new Error('first line\nsecond line');
  }
}

jest.setTimeout(120_000);

let app: TestApp;
let schema: string;
const on = (...args: string[]) => cli([...args, '--schema', schema]);

beforeAll(async () => {
  schema = freshSchema();
  app = await createApp({ workflows: [Echo, Fail], schema });
});
afterAll(() => app?.close());

it('runs list and keys list: one line per run and per key, a line break in a key escaped', async () => {
  const run = await app.durable.start(Echo, {}, { key: 'order\n42' });
  await app.durable.waitForRun(run.runId);
  const runs = await on('runs', 'list', '--workflow', 'cli_out_echo');
  expect(runs.code).toBe(0);
  expect(runs.stdout.trimEnd().split('\n')).toEqual([expect.stringMatching(/^ID /), expect.stringContaining('order\\n42')]);
  const keys = await on('keys', 'list', '--workflow', 'cli_out_echo');
  expect(keys.code).toBe(0);
  expect(keys.stdout.trimEnd().split('\n')).toEqual([expect.stringMatching(/^WORKFLOW /), expect.stringContaining(' order\\n42 ')]);
});

it('runs history: one line per attempt, a line break in its error escaped', async () => {
  const run = await app.durable.start(Fail, {});
  await app.durable.waitForRun(run.runId);
  const history = await on('runs', 'history', run.runId);
  expect(history.code).toBe(0);
  expect(history.stdout.trimEnd().split('\n')).toEqual([expect.any(String), expect.stringContaining('first line\\nsecond line')]);
});

it('a reader that stops early ends the command quietly', async () => {
  // more output than a pipe holds (64 KiB)
  const started = await app.durable.startMany(
    Echo,
    Array.from({ length: 200 }, () => ({ input: { pad: 'x'.repeat(2000) } })),
  );
  for (const s of started) await app.durable.waitForRun((s as { runId: string }).runId);
  const child = spawn(process.execPath, [BIN, 'runs', 'list', '--limit', '1000', '--json', '--schema', schema], {
    env: { ...process.env, DATABASE_URL: databaseUrl() },
  });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  // a reader that takes the first chunk and goes away, as `| head -1` does
  child.stdout.once('data', () => child.stdout.destroy());
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
});
