/**
 * The operator CLI (`runCli`, which bin/nestjs-durable.js runs; run in this process, see support/cli.ts) against a
 * schema that a test app (with the workflows and a worker) uses: every command, the --json
 * documents, the one-line errors with their code, and the exit codes (0 done, 1 refused or
 * failed, 2 bad usage). The usage itself (help, bad usage, unreachable database), with the bin
 * as a process of its own, is in cli-usage.spec.ts.
 */
import { RunContext, Step, Workflow } from '../../src';
import { createApp, freshSchema, sql, TestApp, waitFor } from '../support';
import { cli, expectError } from '../support/cli';

@Workflow('cli_echo')
class Echo {
  @Step()
  async echo(ctx: RunContext<{ n: number }>) {
    return ctx.input.n;
  }
}

@Workflow('cli_flaky', { retry: { attempts: 1 } })
class Flaky {
  static failing = true;
  @Step()
  async run() {
    if (Flaky.failing) throw new Error('flaky failed');
    return 'ok';
  }
}

@Workflow('cli_approval')
class Approval {
  @Step()
  async decide(ctx: RunContext) {
    return ctx.waitForInput<unknown>('decision');
  }
}

@Workflow('cli_events')
class Events {
  @Step()
  async wait(ctx: RunContext) {
    return ctx.waitForEvent<unknown>('go');
  }
}

// every command boots the module: slow on a loaded machine
jest.setTimeout(240_000);

let app: TestApp;
let schema: string;
const on = (...args: string[]) => cli([...args, '--schema', schema]);
const json = async (...args: string[]) => {
  const r = await on(...args, '--json');
  expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
  return JSON.parse(r.stdout);
};
const statusOf = async (id: string) => (await app.durable.getRun(id))?.status;

beforeAll(async () => {
  schema = freshSchema();
  app = await createApp({ workflows: [Echo, Flaky, Approval, Events], schema });
});

describe('nestjs-durable runs', () => {
  it('runs list: a table for people, RunInfo[] with --json, filtered', async () => {
    const a = await app.durable.start(Echo, { n: 1 }, { key: 'cli-a' });
    const b = await app.durable.start(Echo, { n: 2 });
    await app.durable.waitForRun(a.runId);
    await app.durable.waitForRun(b.runId);

    const table = await on('runs', 'list', '--workflow', 'cli_echo');
    expect(table.code).toBe(0);
    const lines = table.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^ID\s+WORKFLOW\s+STATUS\s+KEY\s+STEP\s+ATTEMPT\s+CREATED$/);
    expect(lines.slice(1).map((l) => l.split(/\s+/)[0])).toEqual([b.runId, a.runId]);

    const listed = await json('runs', 'list', '--workflow', 'cli_echo', '--status', 'completed', '--key', 'cli-a');
    expect(listed).toEqual([expect.objectContaining({ id: a.runId, workflow: 'cli_echo', status: 'completed', key: 'cli-a', input: { n: 1 }, result: 1 })]);
    expect(await json('runs', 'list', '--workflow', 'cli_echo', '--limit', '1')).toHaveLength(1);
  });

  it('runs get: the run, or run_not_found', async () => {
    const { runId } = await app.durable.start(Echo, { n: 3 });
    await app.durable.waitForRun(runId);
    expect(await json('runs', 'get', runId)).toMatchObject({ id: runId, status: 'completed', result: 3, step: null, stepIndex: 1 });
    const text = await on('runs', 'get', runId);
    expect(text.stdout).toMatch(/^status:\s+completed$/m);
    // past its last step: no step, as the dashboard shows it; a run still going shows its step's position
    expect(text.stdout).toMatch(/^step:\s+-$/m);
    const row = (await on('runs', 'list', '--workflow', 'cli_echo', '--limit', '1')).stdout.trimEnd().split('\n')[1].split(/\s+/);
    expect(row.slice(0, 5)).toEqual([runId, 'cli_echo', 'completed', '-', '-']);
    const waiting = await app.durable.start(Approval);
    await waitFor(async () => (await statusOf(waiting.runId)) === 'waiting');
    expect((await on('runs', 'get', waiting.runId)).stdout).toMatch(/^step:\s+#0$/m);
    await app.durable.cancel(waiting.runId);
    expectError(await on('runs', 'get', '0190d7a0-0000-7000-8000-000000000000'), 1, 'run_not_found');
    expectError(await on('runs', 'get', 'not-a-uuid'), 2, 'usage'); // not a run id: bad usage (cli-values.spec)
  });

  it('runs cancel: a waiting run is cancelled; the reason is recorded', async () => {
    const { runId } = await app.durable.start(Approval);
    await waitFor(async () => (await statusOf(runId)) === 'waiting');
    expect(await json('runs', 'cancel', runId, '--reason', 'operator')).toEqual({ runId, status: 'cancelled', cancelled: true });
    expect((await app.durable.getRun(runId))?.error).toMatchObject({ message: 'operator' });
  });

  it('runs retry: a failed run runs again; a run that did not fail is refused', async () => {
    Flaky.failing = true;
    const { runId } = await app.durable.start(Flaky, undefined, { key: 'retry-me' });
    await app.durable.waitForRun(runId);
    expect(await statusOf(runId)).toBe('failed');
    Flaky.failing = false;
    expect(await json('runs', 'retry', runId)).toMatchObject({ runId });
    expect((await app.durable.waitForRun(runId, { timeout: 20_000 })).status).toBe('completed');
    expectError(await on('runs', 'retry', runId), 1, 'not_failed');

    // runs history: the failed attempt and the retried one (step names need the definition: by position here)
    const history = await json('runs', 'history', runId);
    expect(history).toEqual([
      expect.objectContaining({ step: 0, name: null, status: 'failed', error: expect.objectContaining({ message: 'flaky failed' }) }),
      expect.objectContaining({ step: 0, name: null, status: 'completed' }),
    ]);
    const text = await on('runs', 'history', runId);
    expect(text.stdout.split('\n')[0]).toMatch(/^STEP\s+ATTEMPT\s+STATUS\s+STARTED\s+FINISHED\s+NODE\s+ERROR$/);
    expect(text.stdout).toMatch(/^#0\s+1\s+failed\s.*flaky failed$/m);
    expectError(await on('runs', 'history', '0190d7a0-0000-7000-8000-000000000000'), 1, 'run_not_found');
  });

  it('runs retry of a run whose key a newer run took needs the reuse rule: refused, nothing changed', async () => {
    Flaky.failing = true;
    const first = await app.durable.start(Flaky, undefined, { key: 'taken' });
    await app.durable.waitForRun(first.runId);
    const second = await app.durable.start(Flaky, undefined, { key: 'taken' }); // afterClose: the key moves on
    await app.durable.waitForRun(second.runId);
    const r = await on('runs', 'retry', first.runId);
    expectError(r, 1, 'unknown_workflow');
    expect(r.stderr).toContain('reuse rule');
    const [row] = await sql(`SELECT status, holds_key FROM "${schema}".runs WHERE id = $1`, [first.runId]);
    expect(row).toEqual({ status: 'failed', holds_key: false });
  });

  it('runs release-key: a finished run’s key goes (recorded with --by); then no_key; a going run is not_finished', async () => {
    const { runId } = await app.durable.start(Echo, { n: 4 }, { key: 'release-me' });
    await app.durable.waitForRun(runId);
    expect(await json('runs', 'release-key', runId, '--by', 'ops')).toEqual({ runId, releasedBy: 'ops', status: 'completed' });
    expect((await app.durable.getRun(runId))?.holdsKey).toBe(false);
    expectError(await on('runs', 'release-key', runId), 1, 'no_key');

    const waiting = await app.durable.start(Approval, undefined, { key: 'still-going' });
    await waitFor(async () => (await statusOf(waiting.runId)) === 'waiting');
    expectError(await on('runs', 'release-key', waiting.runId), 1, 'not_finished');
    await app.durable.cancel(waiting.runId);
  });

  it('runs provide-input: the waiting run resumes with the value', async () => {
    const { runId } = await app.durable.start(Approval);
    await waitFor(async () => (await statusOf(runId)) === 'waiting');
    expect(await json('runs', 'provide-input', runId, 'decision', '{"approved":true}')).toMatchObject({ runId, name: 'decision' });
    expect(await app.durable.waitForRun(runId, { timeout: 20_000 })).toMatchObject({ status: 'completed', result: { approved: true } });
    expectError(await on('runs', 'provide-input', '0190d7a0-0000-7000-8000-000000000000', 'decision', 'true'), 1, 'run_not_found');
  });

  it('runs send-event: delivered to the waiting run (payload optional); kept with --buffer', async () => {
    const { runId } = await app.durable.start(Events);
    await waitFor(async () => (await statusOf(runId)) === 'waiting');
    expect(await json('runs', 'send-event', runId, 'go', '[1,2]')).toMatchObject({ runId, name: 'go', outcome: 'delivered' });
    expect(await app.durable.waitForRun(runId, { timeout: 20_000 })).toMatchObject({ status: 'completed', result: [1, 2] });

    const other = await app.durable.start(Events);
    await waitFor(async () => (await statusOf(other.runId)) === 'waiting');
    expect((await json('runs', 'send-event', other.runId, 'later', '--buffer')).outcome).toBe('kept');
    await app.durable.cancel(other.runId);
  });
});

describe('nestjs-durable flows', () => {
  it('flows get shows the nodes; flows rerun --from runs a node and its downstream again', async () => {
    const flow = await app.durable.startFlow(
      app.durable
        .flow({ name: 'cli flow' })
        .add('a', Echo, { n: 1 })
        .add('b', Echo, { n: 2 }, { deps: ['a'] })
        .add('c', Echo, { n: 3 }),
    );
    await Promise.all(Object.values(flow.runIds).map((id) => app.durable.waitForRun(id, { timeout: 20_000 })));
    const shown = await json('flows', 'get', flow.flowId);
    expect(shown).toMatchObject({ flowId: flow.flowId, flowName: 'cli flow', edges: [{ from: 'a', to: 'b' }] });
    expect(shown.nodes.map((n: { name: string; status: string; runId: string }) => [n.name, n.status, n.runId])).toEqual(
      ['a', 'b', 'c'].map((name) => [name, 'completed', flow.runIds[name]]),
    );
    expect((await on('flows', 'get', flow.flowId)).stdout.split('\n')[0]).toMatch(/^NODE\s+WORKFLOW\s+DEPS\s+STATUS\s+RUN$/);

    expectError(await on('flows', 'rerun', flow.flowId), 2, 'usage');
    expectError(await on('flows', 'rerun', flow.flowId, '--from', 'nope'), 1, 'invalid');
    expectError(await on('flows', 'rerun', '0190d7a0-0000-7000-8000-000000000000', '--from', 'a'), 1, 'run_not_found');
    const rerun = await json('flows', 'rerun', flow.flowId, '--from', 'a');
    expect(Object.keys(rerun.runIds).sort()).toEqual(['a', 'b']);
    expect(rerun.runIds.a).not.toBe(flow.runIds.a);
    expect(await app.durable.waitForRun(rerun.runIds.b, { timeout: 20_000 })).toMatchObject({ status: 'completed', result: 2 });
    const after = await app.durable.getFlowGraph(flow.flowId);
    expect(Object.fromEntries(after.nodes.map((n) => [n.name, n.runId]))).toEqual({ a: rerun.runIds.a, b: rerun.runIds.b, c: flow.runIds.c });
  });
});

describe('nestjs-durable overview', () => {
  it('keys list and activity', async () => {
    const a = await app.durable.start(Approval, undefined, { key: 'k-listed' });
    await waitFor(async () => (await statusOf(a.runId)) === 'waiting');
    expect(await app.durable.start(Approval, undefined, { key: 'k-listed' })).toEqual({ runId: a.runId, outcome: 'useExisting' }); // a re-add
    const keys = await json('keys', 'list', '--workflow', 'cli_approval', '--search', 'k-list');
    expect(keys).toEqual({
      keys: [{ workflow: 'cli_approval', key: 'k-listed', holderId: a.runId, holderStatus: 'waiting', runs: 1, readdsLastDay: 1, cursor: 'k-listed' }],
      next: null,
    });
    // every workflow's keys, newest first
    const { keys: all, next } = await json('keys', 'list');
    expect(next).toBeNull();
    expect(all[0]).toMatchObject({ workflow: 'cli_approval', key: 'k-listed' });
    expect(new Set(all.map((k: { workflow: string }) => k.workflow))).toEqual(new Set(['cli_approval', 'cli_echo', 'cli_flaky']));
    const events = await json('activity', '--key', 'k-listed', '--kind', 'key_duplicate');
    expect(events).toEqual([
      expect.objectContaining({
        kind: 'key_duplicate',
        runId: a.runId,
        details: expect.objectContaining({ key: 'k-listed', outcome: 'useExisting' }),
      }),
    ]);
    await app.durable.cancel(a.runId);
    const text = await on('activity', '--key', 'k-listed');
    expect(text.stdout.split('\n')[0]).toMatch(/^AT\s+KIND\s+RUN\s+WORKFLOW\s+KEY\s+DETAILS$/);
  });

  it('status and workflows list', async () => {
    const waiting = await app.durable.start(Approval);
    await waitFor(async () => (await statusOf(waiting.runId)) === 'waiting');
    const status = await json('status');
    expect(status).toMatchObject({ schema, backlog: { due: expect.any(Number), lagMs: expect.any(Number) } });
    expect(status.going).toContainEqual({ workflow: 'cli_approval', status: 'waiting', count: expect.any(Number) });
    expect(status.finishedLastHour).toContainEqual({ workflow: 'cli_echo', status: 'completed', count: expect.any(Number) });
    expect(status.nodes).toContainEqual(expect.objectContaining({ nodeId: expect.any(String), alive: true, running: expect.any(Number), concurrency: 5 }));
    expect((await json('status', '--node-timeout', '2m')).nodes).toContainEqual(expect.objectContaining({ alive: true }));

    const workflows = await json('workflows', 'list');
    expect(workflows).toContainEqual(
      expect.objectContaining({ workflow: 'cli_approval', counts: expect.objectContaining({ waiting: expect.any(Number) }), schedules: [] }),
    );
    // with the key rules of the definition the app wrote at boot
    expect(workflows).toContainEqual(
      expect.objectContaining({
        workflow: 'cli_events',
        definition: expect.objectContaining({ reuse: 'afterClose', onDuplicate: 'useExisting', steps: ['wait'] }),
      }),
    );
    const text = await on('workflows', 'list');
    expect(text.stdout).toMatch(/^WORKFLOW\s+PENDING\s+RUNNING\s+WAITING\s+COMPENSATING.*\s+REUSE\s+ON DUPLICATE$/m);
    expect(text.stdout).toMatch(/^cli_approval\s.*\s+afterClose\s+useExisting$/m);
    await app.durable.cancel(waiting.runId);
  });

  it('workflows pause|resume: a paused workflow’s runs are not claimed until resumed; shown by workflows list; an unknown name is refused', async () => {
    await app.durable.waitForRun((await app.durable.start(Echo, { n: 0 })).runId); // the database knows cli_echo
    const paused = await on('workflows', 'pause', 'cli_echo');
    expect({ code: paused.code, stderr: paused.stderr }).toEqual({ code: 0, stderr: '' });
    expect(paused.stdout).toMatch(/^cli_echo: paused/);
    expect((await app.durable.listWorkflows()).find((w) => w.name === 'cli_echo')?.paused).toBe(true);
    expect(await json('workflows', 'list')).toContainEqual(expect.objectContaining({ workflow: 'cli_echo', paused: true }));
    expect((await on('workflows', 'list')).stdout).toMatch(/^WORKFLOW\s+PENDING.*SCHEDULES\s+PAUSED\s+REUSE\s+ON DUPLICATE$/m);
    const held = await app.durable.start(Echo, { n: 1 });
    // a run of another workflow started after it is claimed and finishes; the paused one is still pending
    const other = await app.durable.start(Approval);
    await waitFor(async () => (await statusOf(other.runId)) === 'waiting');
    expect(await statusOf(held.runId)).toBe('pending');
    expect(await json('workflows', 'resume', 'cli_echo')).toEqual({ workflow: 'cli_echo', paused: false });
    await waitFor(async () => (await statusOf(held.runId)) === 'completed');
    expect((await app.durable.listWorkflows()).find((w) => w.name === 'cli_echo')?.paused).toBe(false);
    await app.durable.cancel(other.runId);
    expectError(await on('workflows', 'pause', 'cli_no_such_workflow'), 1, 'unknown_workflow');
  });

  it('migrate --print-sql writes nothing; migrate applies; then nothing is pending', async () => {
    const fresh = freshSchema();
    const exists = async () => (await sql(`SELECT 1 FROM information_schema.schemata WHERE schema_name = $1`, [fresh])).length > 0;
    const printed = await cli(['migrate', '--print-sql', '--schema', fresh]);
    expect(printed.code).toBe(0);
    expect(printed.stdout).toContain(`CREATE SCHEMA IF NOT EXISTS "${fresh}"`);
    expect(printed.stdout).toContain(`CREATE TABLE IF NOT EXISTS "${fresh}".runs`);
    expect(await exists()).toBe(false);

    const applied = JSON.parse((await cli(['migrate', '--schema', fresh, '--json'])).stdout);
    expect(applied.schema).toBe(fresh);
    expect(applied.applied.length).toBeGreaterThan(5);
    expect(await exists()).toBe(true);
    expect(JSON.parse((await cli(['migrate', '--print-sql', '--schema', fresh, '--json'])).stdout)).toEqual({ schema: fresh, pending: [] });
  });
});
