/**
 * What the operator CLI's actions on a run report when the run had already finished: `runs cancel`
 * and `runs provide-input` leave a finished run as it is (exit 0, as `durable.cancel` and
 * `durable.provideInput` do), and say so, in the text and in `--json`, rather than reading as done.
 */
import { RunContext, Step, Workflow } from '../../src';
import { createApp, freshSchema, TestApp, waitFor } from '../support';
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

describe('nestjs-durable runs cancel / provide-input on a run that had already finished', () => {
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

  it('runs provide-input: a finished run ignores the value, and the CLI says so', async () => {
    const done = await app.durable.start(Echo, { n: 2 });
    await app.durable.waitForRun(done.runId);
    const json = await on('runs', 'provide-input', done.runId, 'decision', 'true', '--json');
    expect({ code: json.code, stderr: json.stderr }).toEqual({ code: 0, stderr: '' });
    expect(JSON.parse(json.stdout)).toEqual({ runId: done.runId, name: 'decision', status: 'completed', ignored: true });
    const text = await on('runs', 'provide-input', done.runId, 'decision', 'true');
    expect(text.stdout.trim()).toBe(`input "decision" ignored: run ${done.runId} had already finished (completed)`);

    const waiting = await app.durable.start(Approval);
    await waitFor(async () => (await statusOf(waiting.runId)) === 'waiting');
    const given = await on('runs', 'provide-input', waiting.runId, 'decision', '{"ok":true}', '--json');
    expect(JSON.parse(given.stdout)).toMatchObject({ runId: waiting.runId, name: 'decision', ignored: false });
    expect(await app.durable.waitForRun(waiting.runId, { timeout: 20_000 })).toMatchObject({ status: 'completed', result: { ok: true } });
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
