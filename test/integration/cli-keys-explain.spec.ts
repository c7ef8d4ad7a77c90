/**
 * `nestjs-durable keys explain` and the table of workflow definitions it reads: each app node
 * writes its definitions at boot (the last node to boot wins); the CLI explains a start from them
 * exactly as `durable.explainStart` does on the app, writes nothing, and refuses a workflow whose
 * definition the database does not hold.
 */
import { DataSource } from 'typeorm';
import { durableMigrations, OnDuplicate, RunStatus, Step, Workflow } from '../../src';
import { runCli } from '../../src/cli/cli';
import { createApp, databaseUrl, freshSchema, ident, RecordingLogger, sql, TestApp } from '../support';
import { cli, expectError } from '../support/cli';
import { forceStatus } from '../support/keys';

@Workflow('cx_plain')
class Plain {
  @Step()
  async one() {
    return 1;
  }
  @Step()
  async two() {
    return 2;
  }
}

@Workflow('cx_strict', { reuse: 'never', onDuplicate: 'error' })
class Strict {
  @Step()
  async one() {
    return 1;
  }
}

@Workflow('cx_debounced', { debounce: { period: '1h', merge: (held: unknown, incoming: unknown) => [held, incoming] } })
class Debounced {
  @Step()
  async one() {
    return 1;
  }
}

/** The same name as {@link Strict}, with other rules: the definition of a node of a newer release. */
@Workflow('cx_strict', { reuse: 'afterFailure', onDuplicate: 'runAgain' })
class StrictNext {
  @Step()
  async first() {
    return 1;
  }
  @Step()
  async second() {
    return 2;
  }
}

/** Runs the CLI in this process (the grid below would boot a process per cell otherwise). */
async function explain(schema: string, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(['keys', 'explain', ...args, '--schema', schema], {
    stdout: (t) => out.push(t),
    stderr: (t) => err.push(t),
    env: { DATABASE_URL: databaseUrl() },
  });
  return { code, stdout: out.join('\n'), stderr: err.join('\n') };
}

/** Every row a start or an explanation could write, and the definitions as stored. */
async function everything(schema: string): Promise<unknown> {
  const s = ident(schema);
  const [counts] = await sql(
    `SELECT (SELECT count(*) FROM ${s}.runs)::int AS runs, (SELECT count(*) FROM ${s}.activity)::int AS activity,
       (SELECT count(*) FROM ${s}.events)::int AS events`,
  );
  return { counts, definitions: await sql(`SELECT * FROM ${s}.workflow_definitions ORDER BY workflow`) };
}

const definitionOf = async (schema: string, workflow: string) =>
  (await sql(`SELECT * FROM ${ident(schema)}.workflow_definitions WHERE workflow = $1`, [workflow]))[0];

/** `--on-duplicate` as the CLI spells each mode (undefined: the workflow's). */
const MODES: [OnDuplicate | undefined, string[]][] = [
  [undefined, []],
  ['useExisting', ['--on-duplicate', 'useExisting']],
  ['error', ['--on-duplicate', 'error']],
  ['cancelExisting', ['--on-duplicate', 'cancelExisting']],
  ['runAgain', ['--on-duplicate', 'runAgain']],
  [{ sendEvent: 'more' }, ['--on-duplicate', 'sendEvent:more']],
];
const STATUSES: (RunStatus | 'none')[] = ['none', 'pending', 'running', 'compensating', 'completed', 'failed'];

jest.setTimeout(240_000);

describe('workflow definitions in the database', () => {
  it('each node writes its definitions at boot; a node booting with another definition of the same name replaces it, recorded with its node', async () => {
    const schema = freshSchema();
    await createApp({ schema, workflows: [Plain, Strict, Debounced], options: { worker: false, nodeId: 'node-a' } });
    expect(await definitionOf(schema, 'cx_plain')).toMatchObject({
      reuse: 'afterClose',
      on_duplicate: 'useExisting',
      debounce: null,
      steps: ['one', 'two'],
      node_id: 'node-a',
      hash: expect.stringMatching(/^[0-9a-f]{16}$/),
    });
    expect(await definitionOf(schema, 'cx_debounced')).toMatchObject({ debounce: { periodMs: 3_600_000, timeoutMs: null, merge: 'function' } });
    const first = await definitionOf(schema, 'cx_strict');
    expect(first).toMatchObject({ reuse: 'never', on_duplicate: 'error', steps: ['one'], node_id: 'node-a' });

    await createApp({ schema, workflows: [StrictNext], options: { worker: false, nodeId: 'node-b' } });
    const next = await definitionOf(schema, 'cx_strict');
    expect(next).toMatchObject({ reuse: 'afterFailure', on_duplicate: 'runAgain', steps: ['first', 'second'], node_id: 'node-b' });
    expect(next.hash).not.toBe(first.hash);
    expect(next.updated_at.getTime()).toBeGreaterThanOrEqual(first.updated_at.getTime());
    // the definitions node-b does not have stay as node-a wrote them
    expect(await definitionOf(schema, 'cx_plain')).toMatchObject({ node_id: 'node-a' });

    // the same definition gives the same hash on every node
    await createApp({ schema, workflows: [Strict], options: { worker: false, nodeId: 'node-c' } });
    expect(await definitionOf(schema, 'cx_strict')).toMatchObject({ hash: first.hash, node_id: 'node-c' });

    // the CLI knows the workflows by their definitions, before any of them has a run
    const listed = JSON.parse((await cli(['workflows', 'list', '--schema', schema, '--json'])).stdout);
    expect(listed.map((w: { workflow: string }) => w.workflow).sort()).toEqual(['cx_debounced', 'cx_plain', 'cx_strict']);
    const paused = await cli(['workflows', 'pause', 'cx_plain', '--schema', schema]);
    expect({ code: paused.code, stderr: paused.stderr }).toEqual({ code: 0, stderr: '' });
  });

  it('a node on a schema its own runner has not migrated to the table yet starts, warns, and writes none', async () => {
    const schema = freshSchema();
    const ds = await new DataSource({ type: 'postgres', url: databaseUrl() }).initialize();
    const runner = ds.createQueryRunner();
    try {
      for (const M of durableMigrations(schema).filter((M) => !M.name.startsWith('DurableWorkflowDefinitions'))) await new M().up(runner);
    } finally {
      await runner.release();
      await ds.destroy();
    }
    const logger = new RecordingLogger();
    const { durable } = await createApp({ schema, workflows: [Plain], options: { worker: false, migrationsRun: false }, logger });
    expect(logger.entries).toContainEqual(expect.objectContaining({ level: 'warn', message: expect.stringContaining('lacks the table workflow_definitions') }));
    expect((await durable.start(Plain, {}, { key: 'k' })).outcome).toBe('created');
    expectError(await cli(['keys', 'explain', 'cx_plain', 'k', '--schema', schema]), 1, '42P01');
  });
});

describe('nestjs-durable keys explain', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createApp({ workflows: [Plain, Strict, Debounced], options: { worker: false } });
  });

  it('answers what explainStart answers, for every holder status and onDuplicate mode, and writes nothing', async () => {
    const seen = new Set<string>();
    let cell = 0;
    for (const workflow of [Plain, Strict]) {
      const name = workflow === Plain ? 'cx_plain' : 'cx_strict';
      for (const status of STATUSES) {
        const key = `cell-${cell++}`;
        if (status !== 'none') {
          const { runId } = await t.durable.start(workflow, {}, { key });
          if (status !== 'pending') await forceStatus(t.schema, runId, status);
        }
        const before = await everything(t.schema);
        for (const [onDuplicate, flag] of MODES) {
          if (workflow === Strict && onDuplicate === 'runAgain') continue; // refused: see below
          const r = await explain(t.schema, name, key, ...flag, '--json');
          expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
          const got = JSON.parse(r.stdout);
          const expected = await t.durable.explainStart(workflow, {}, { key, onDuplicate });
          expect(got.explanation).toEqual(expected);
          expect(got).toMatchObject({ workflow: name, key, definition: { workflow: name } });
          seen.add(expected.outcome);
        }
        expect(await everything(t.schema)).toEqual(before);
      }
    }
    expect([...seen].sort()).toEqual(['cancelExisting', 'created', 'error', 'runAgain', 'sendEvent', 'useExisting']);
  });

  it('names a debouncing holder and the run waiting behind a holder', async () => {
    const { runId: debounced } = await t.durable.start(Debounced, { v: 1 }, { key: 'd' });
    const d = JSON.parse((await explain(t.schema, 'cx_debounced', 'd', '--json')).stdout);
    expect(d.explanation).toEqual(await t.durable.explainStart(Debounced, {}, { key: 'd' }));
    expect(d.explanation).toMatchObject({ outcome: 'debounced', runId: debounced });

    const { runId: holder } = await t.durable.start(Plain, {}, { key: 'behind' });
    await forceStatus(t.schema, holder, 'running');
    const waiter = await t.durable.start(Plain, {}, { key: 'behind', onDuplicate: 'runAgain' });
    const w = JSON.parse((await explain(t.schema, 'cx_plain', 'behind', '--on-duplicate', 'runAgain', '--json')).stdout);
    expect(w.explanation).toEqual(await t.durable.explainStart(Plain, {}, { key: 'behind', onDuplicate: 'runAgain' }));
    expect(w.explanation).toMatchObject({ outcome: 'runAgain', runId: waiter.runId });
  });

  it('prints the explanation and the definition it used for people', async () => {
    const { runId } = await t.durable.start(Strict, {}, { key: 'shown' });
    await forceStatus(t.schema, runId, 'completed');
    const r = await cli(['keys', 'explain', 'cx_strict', 'shown', '--schema', t.schema]);
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
    expect(r.stdout).toMatch(/^outcome:\s+error$/m);
    expect(r.stdout).toMatch(new RegExp(`^holder:\\s+${runId} \\(completed\\)$`, 'm'));
    expect(r.stdout).toMatch(/^reason:\s+the holder .* reuse 'never' keeps the key after it: onDuplicate 'error' refuses the start \(KeyTakenError\)$/m);
    expect(r.stdout).toMatch(/^reuse:\s+never$/m);
    expect(r.stdout).toMatch(/^on duplicate:\s+error \(the workflow's\)$/m);
    expect(r.stdout).toMatch(/^definition:\s+[0-9a-f]{16}, written by node \S+ at \d{4}-/m);
  });

  it('refuses a workflow whose definition the database does not hold (exit 1), even one with runs', async () => {
    const none = await cli(['keys', 'explain', 'cx_nowhere', 'k', '--schema', t.schema]);
    expectError(none, 1, 'unknown_workflow');
    expect(none.stderr).toContain(`schema ${t.schema} holds no definition of workflow "cx_nowhere"`);

    // a workflow with runs, whose nodes have not booted since the upgrade that added the table
    const schema = freshSchema();
    const old = await createApp({ schema, workflows: [Plain], options: { worker: false } });
    await old.durable.start(Plain, {}, { key: 'k' });
    await sql(`DELETE FROM ${ident(schema)}.workflow_definitions`);
    const before = await everything(schema);
    expectError(await cli(['keys', 'explain', 'cx_plain', 'k', '--schema', schema, '--json']), 1, 'unknown_workflow');
    expect(await everything(schema)).toEqual(before);
  });

  it('refuses an onDuplicate the workflow cannot have and stored rules it does not know (exit 1), and bad usage before connecting (exit 2)', async () => {
    expectError(await explain(t.schema, 'cx_strict', 'k', '--on-duplicate', 'runAgain'), 1, 'invalid');
    // a rule this version does not know (written by a newer one) is refused, not guessed at
    await sql(`UPDATE ${ident(t.schema)}.workflow_definitions SET reuse = 'someday' WHERE workflow = 'cx_debounced'`);
    const unknown = await explain(t.schema, 'cx_debounced', 'k');
    expectError(unknown, 1, 'invalid');
    expect(unknown.stderr).toContain('definition.reuse');
    const nowhere = ['--url', 'postgres://nobody@127.0.0.1:1/none'];
    expectError(await cli(['keys', 'explain', 'cx_plain', 'k', '--on-duplicate', 'sometimes', ...nowhere]), 2, 'usage');
    expectError(await cli(['keys', 'explain', 'cx_plain', 'k', '--on-duplicate', 'sendEvent:', ...nowhere]), 2, 'usage');
    expectError(await cli(['keys', 'explain', 'cx_plain', '', ...nowhere]), 2, 'usage');
    expectError(await cli(['keys', 'explain', 'cx_plain', ...nowhere]), 2, 'usage');
    expectError(await cli(['keys', 'explain', 'cx_plain', 'k', '--reuse', 'never', ...nowhere]), 2, 'usage');
  });
});
