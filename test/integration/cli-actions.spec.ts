/**
 * What the operator CLI's actions on a run report when the engine did not do what was asked:
 * `runs cancel` leaves a finished run as it is (exit 0, as `durable.cancel` does) and says so;
 * `runs provide-input` and `runs send-event` print the outcome the engine gave (`delivered`, `kept`
 * or `dropped`) and exit 1 when the value was dropped (ignored), in the text and in `--json`.
 */
import { RunContext, Step, Workflow } from '../../src';
import { createApp, freshSchema, ident, sql, TestApp, waitFor } from '../support';
import { cli, expectError } from '../support/cli';

@Workflow('cli_actions_echo')
class Echo {
  @Step()
  async echo(ctx: RunContext<{ n: number }>) {
    return ctx.input.n;
  }
}

@Workflow('cli_actions_approval')
class Approval {
  @Step()
  async decide(ctx: RunContext) {
    return ctx.waitForInput<unknown>('decision');
  }
}

jest.setTimeout(180_000);

let app: TestApp;
let schema: string;
const on = (...args: string[]) => cli([...args, '--schema', schema]);
const statusOf = async (id: string) => (await app.durable.getRun(id))?.status;

beforeAll(async () => {
  schema = freshSchema();
  app = await createApp({ workflows: [Echo, Approval], schema });
});

afterAll(() => app?.close());

describe('nestjs-durable runs cancel / provide-input / send-event when the engine did not do what was asked', () => {
  it('runs cancel: a going run is cancelled (cancelled: true); a finished one is left as it is and says so', async () => {
    const going = await app.durable.start(Approval);
    await waitFor(async () => (await statusOf(going.runId)) === 'waiting');
    const cancel = await on('runs', 'cancel', going.runId, '--json');
    expect({ code: cancel.code, stderr: cancel.stderr }).toEqual({ code: 0, stderr: '' });
    expect(JSON.parse(cancel.stdout)).toEqual({ runId: going.runId, status: 'cancelled', cancelled: true });

    const done = await app.durable.start(Echo, { n: 1 });
    await app.durable.waitForRun(done.runId);
    const json = await on('runs', 'cancel', done.runId, '--json');
    expect({ code: json.code, stderr: json.stderr }).toEqual({ code: 0, stderr: '' });
    expect(JSON.parse(json.stdout)).toEqual({ runId: done.runId, status: 'completed', cancelled: false });
    const text = await on('runs', 'cancel', done.runId);
    expect(text.code).toBe(0);
    expect(text.stdout.trim()).toBe(`not cancelled: run ${done.runId} had already finished (completed); it is left as it is`);
    // cancelling again a run that is cancelled already: nothing done either
    expect((await on('runs', 'cancel', going.runId)).stdout.trim()).toBe(
      `not cancelled: run ${going.runId} had already finished (cancelled); it is left as it is`,
    );
    expect(await statusOf(done.runId)).toBe('completed');
  });

  it('runs provide-input: a dropped value (the run had finished) is told, exit 1; delivered and kept ones exit 0', async () => {
    const done = await app.durable.start(Echo, { n: 2 });
    await app.durable.waitForRun(done.runId);
    const json = await on('runs', 'provide-input', done.runId, 'decision', 'true', '--json');
    expect({ code: json.code, stderr: json.stderr }).toEqual({ code: 1, stderr: '' });
    expect(JSON.parse(json.stdout)).toEqual({ runId: done.runId, name: 'decision', outcome: 'dropped', ignored: true, status: 'completed' });
    const text = await on('runs', 'provide-input', done.runId, 'decision', 'true');
    expect({ code: text.code, stderr: text.stderr }).toEqual({ code: 1, stderr: '' });
    expect(text.stdout.trim()).toBe(`input "decision" dropped: run ${done.runId} had already finished (completed)`);

    const waiting = await app.durable.start(Approval);
    await waitFor(async () => (await statusOf(waiting.runId)) === 'waiting');
    // input of another name is kept for a later waitForInput of that name
    const kept = await on('runs', 'provide-input', waiting.runId, 'later', '1', '--json');
    expect({ code: kept.code, stderr: kept.stderr }).toEqual({ code: 0, stderr: '' });
    expect(JSON.parse(kept.stdout)).toEqual({ runId: waiting.runId, name: 'later', outcome: 'kept', ignored: false, status: 'waiting' });
    const given = await on('runs', 'provide-input', waiting.runId, 'decision', '{"ok":true}');
    expect({ code: given.code, stderr: given.stderr }).toEqual({ code: 0, stderr: '' });
    expect(given.stdout.trim()).toMatch(new RegExp(`^input "decision" delivered: run ${waiting.runId} is (pending|running|completed)$`));
    expect(await app.durable.waitForRun(waiting.runId, { timeout: 20_000 })).toMatchObject({ status: 'completed', result: { ok: true } });
  });

  it('runs send-event: a dropped event exits 1 and says so; delivered and kept ones exit 0', async () => {
    const waiting = await app.durable.start(Approval);
    await waitFor(async () => (await statusOf(waiting.runId)) === 'waiting');
    // not waiting for this event, and not buffered: dropped
    const dropped = await on('runs', 'send-event', waiting.runId, 'nudge', '--json');
    expect({ code: dropped.code, stderr: dropped.stderr }).toEqual({ code: 1, stderr: '' });
    expect(JSON.parse(dropped.stdout)).toEqual({ runId: waiting.runId, name: 'nudge', outcome: 'dropped', status: 'waiting' });
    const droppedText = await on('runs', 'send-event', waiting.runId, 'nudge');
    expect({ code: droppedText.code, stderr: droppedText.stderr }).toEqual({ code: 1, stderr: '' });
    expect(droppedText.stdout.trim()).toBe(
      `event "nudge" dropped: run ${waiting.runId} is waiting, but not for event "nudge"; send it with buffer to keep it until the run waits for it`,
    );
    const kept = await on('runs', 'send-event', waiting.runId, 'nudge', '--buffer', '--json');
    expect({ code: kept.code, stderr: kept.stderr }).toEqual({ code: 0, stderr: '' });
    expect(JSON.parse(kept.stdout)).toEqual({ runId: waiting.runId, name: 'nudge', outcome: 'kept', status: 'waiting' });

    await app.durable.cancel(waiting.runId);
    for (const buffer of [[], ['--buffer']]) {
      const ended = await on('runs', 'send-event', waiting.runId, 'nudge', '{"a":1}', ...buffer);
      expect({ code: ended.code, stderr: ended.stderr }).toEqual({ code: 1, stderr: '' });
      expect(ended.stdout.trim()).toBe(`event "nudge" dropped: run ${waiting.runId} had already finished (cancelled)`);
    }
    expectError(await on('runs', 'send-event', '0190d7a0-0000-7000-8000-000000000000', 'nudge'), 1, 'run_not_found');
  });

  it('runs provide-input to a run past its workflow deadline, not finished yet: dropped, exit 1', async () => {
    // a schema no node works on (no sweep times the run out): a run waiting for the input, its deadline passed
    const quiet = freshSchema();
    expect((await cli(['migrate', '--schema', quiet])).code).toBe(0);
    const [{ id }] = await sql<{ id: string }>(
      `INSERT INTO ${ident(quiet)}.runs (id, workflow, status, wait_kind, wait_name, deadline_at)
       VALUES (gen_random_uuid(), 'cli_actions_approval', 'waiting', 'input', 'decision', now() - interval '1 minute') RETURNING id::text`,
    );
    const r = await cli(['runs', 'provide-input', id, 'decision', 'true', '--json', '--schema', quiet]);
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 1, stderr: '' });
    expect(JSON.parse(r.stdout)).toEqual({ runId: id, name: 'decision', outcome: 'dropped', ignored: true, status: 'waiting' });
    const text = await cli(['runs', 'provide-input', id, 'decision', 'true', '--schema', quiet]);
    expect({ code: text.code, stdout: text.stdout.trim() }).toEqual({
      code: 1,
      stdout: `input "decision" dropped: run ${id} is past its workflow deadline (waiting)`,
    });
    expect(await sql(`SELECT 1 FROM ${ident(quiet)}.events`)).toEqual([]);
  });

  it('runs send-event without --buffer to a running run: dropped because it is not waiting for it, or because it is past its workflow deadline', async () => {
    // a schema no node works on: runs left running as written, one within its deadline, one past it
    const quiet = freshSchema();
    expect((await cli(['migrate', '--schema', quiet])).code).toBe(0);
    const runningRun = async (deadline: string) =>
      (
        await sql<{ id: string }>(
          `INSERT INTO ${ident(quiet)}.runs (id, workflow, status, deadline_at)
           VALUES (gen_random_uuid(), 'cli_actions_approval', 'running', now() + $1::interval) RETURNING id::text`,
          [deadline],
        )
      )[0].id;
    const [within, past] = [await runningRun('1 hour'), await runningRun('-1 minute')];
    const hint = 'send it with buffer to keep it until the run waits for it';
    for (const [id, why] of [
      [within, `is running and not waiting for event "nudge"; ${hint}`],
      [past, 'is past its workflow deadline (running)'],
    ]) {
      const text = await cli(['runs', 'send-event', id, 'nudge', '--schema', quiet]);
      expect({ code: text.code, stderr: text.stderr, stdout: text.stdout.trim() }).toEqual({
        code: 1,
        stderr: '',
        stdout: `event "nudge" dropped: run ${id} ${why}`,
      });
      const json = await cli(['runs', 'send-event', id, 'nudge', '--json', '--schema', quiet]);
      expect({ code: json.code, stdout: JSON.parse(json.stdout) }).toEqual({
        code: 1,
        stdout: { runId: id, name: 'nudge', outcome: 'dropped', status: 'running' },
      });
    }
    expect(await sql(`SELECT 1 FROM ${ident(quiet)}.events`)).toEqual([]);
  });
});

describe('nestjs-durable flows of a flow that is not there', () => {
  it('flows get and flows rerun name the flow, not a run', async () => {
    for (const args of [
      ['flows', 'get', 'no-such-flow'],
      ['flows', 'rerun', 'no-such-flow', '--from', 'a'],
    ]) {
      const r = await on(...args);
      expectError(r, 1, 'run_not_found');
      expect(r.stderr.trim()).toBe('error run_not_found: flow no-such-flow not found');
    }
  });
});

describe('nestjs-durable workflows pause / resume', () => {
  it('take a workflow paused before and resumed since, which has no run, schedule or definition', async () => {
    const own = freshSchema();
    // an app that registers no workflow (a web node) pauses and resumes one by name
    const web = await createApp({ schema: own, options: { worker: false } });
    await web.durable.pause('ghost_wf');
    await web.durable.resume('ghost_wf');
    const paused = await cli(['workflows', 'pause', 'ghost_wf', '--schema', own]);
    expect({ code: paused.code, stderr: paused.stderr }).toEqual({ code: 0, stderr: '' });
    expect(await sql(`select workflow, paused from ${ident(own)}.workflow_controls`)).toEqual([{ workflow: 'ghost_wf', paused: true }]);
    // a name never seen is still refused
    expectError(await cli(['workflows', 'pause', 'ghost_wf_typo', '--schema', own]), 1, 'unknown_workflow');
  });
});
