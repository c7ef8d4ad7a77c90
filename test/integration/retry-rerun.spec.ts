import { randomUUID } from 'crypto';
import { NotFailedError, NotFinishedError, RunContext, RunNotFoundError, Step, Workflow } from '../../src';
import { createApp, Gate, waitFor } from '../support';

const calls: string[] = [];
let failSecond = true;
let gate = new Gate();

@Workflow('retry_three')
class Three {
  @Step()
  async one(ctx: RunContext<{ n: number }>) {
    calls.push(`one:${ctx.runId}`);
    ctx.put('fromOne', ctx.input.n + 1);
    return 'one';
  }

  @Step({ retry: { attempts: 1 } })
  async two(ctx: RunContext<{ n: number }>) {
    calls.push(`two:${ctx.runId}`);
    if (failSecond) throw new Error('second step broke');
    return ctx.get<number>('fromOne');
  }

  @Step()
  async three(ctx: RunContext<{ n: number }>) {
    calls.push(`three:${ctx.runId}`);
    return { total: ctx.get<number>('fromOne')! * 10, input: ctx.input };
  }
}

@Workflow('retry_gated')
class Gated {
  @Step()
  async hold(ctx: RunContext) {
    await gate.wait(ctx.signal);
    return 'ok';
  }
}

describe('retry and rerun', () => {
  beforeEach(() => {
    calls.length = 0;
    failSecond = true;
    gate = new Gate();
  });
  afterEach(() => gate.open());

  it('retry resumes a failed run at its failed step: earlier steps are not executed again', async () => {
    const { durable } = await createApp({ workflows: [Three] });
    const { runId } = await durable.start('retry_three', { n: 4 });
    const failed = await durable.waitForRun(runId, { timeout: 10_000 });
    expect(failed.status).toBe('failed');
    expect(calls).toEqual([`one:${runId}`, `two:${runId}`]);
    const attempts = async () =>
      (await durable.getRunHistory(runId)).map((h) => [h.name, h.attempt, h.status, (h.error as { message?: string } | undefined)?.message]);
    const beforeRetry = [
      ['one', 1, 'completed', undefined],
      ['two', 1, 'failed', 'second step broke'],
    ];
    expect(await attempts()).toEqual(beforeRetry);

    failSecond = false;
    await durable.retry(runId);
    const run = await durable.waitForRun(runId, { timeout: 10_000 });
    expect(run.status).toBe('completed');
    expect(run.id).toBe(runId);
    // the context saved by step one survived the failure and the retry
    expect(run.result).toEqual({ total: 50, input: { n: 4 } });
    expect(calls).toEqual([`one:${runId}`, `two:${runId}`, `two:${runId}`, `three:${runId}`]);
    // the attempt that failed the run is still in its history, before those of the retry
    expect(await attempts()).toEqual([...beforeRetry, ['two', 1, 'completed', undefined], ['three', 1, 'completed', undefined]]);
  });

  it('retry of a run that has not failed rejects with NotFailedError; unknown id with RunNotFoundError', async () => {
    failSecond = false;
    const { durable } = await createApp({ workflows: [Three, Gated] });
    const done = await durable.start('retry_three', { n: 1 });
    await durable.waitForRun(done.runId, { timeout: 10_000 });
    await expect(durable.retry(done.runId)).rejects.toBeInstanceOf(NotFailedError);

    const running = await durable.start('retry_gated');
    await waitFor(async () => (await durable.getRun(running.runId))?.status === 'running');
    await expect(durable.retry(running.runId)).rejects.toBeInstanceOf(NotFailedError);

    const pending = await durable.start('retry_gated', {}, { delay: '1h' });
    await expect(durable.retry(pending.runId)).rejects.toBeInstanceOf(NotFailedError);

    await expect(durable.retry(randomUUID())).rejects.toBeInstanceOf(RunNotFoundError);
    gate.open();
    await durable.waitForRun(running.runId, { timeout: 10_000 });
  });

  it('rerun makes a fresh copy of a finished run with a new id, from its first step', async () => {
    failSecond = false;
    const { durable } = await createApp({ workflows: [Three] });
    const first = await durable.start('retry_three', { n: 2 });
    const original = await durable.waitForRun(first.runId, { timeout: 10_000 });
    expect(original.status).toBe('completed');

    const copy = await durable.rerun(first.runId);
    expect(copy.runId).not.toBe(first.runId);
    expect(copy.outcome).toBe('created');
    const rerun = await durable.waitForRun(copy.runId, { timeout: 10_000 });
    expect(rerun).toMatchObject({ status: 'completed', workflow: 'retry_three', input: { n: 2 } });
    expect(rerun.result).toEqual({ total: 30, input: { n: 2 } });
    expect(calls.filter((c) => c.endsWith(copy.runId))).toEqual([`one:${copy.runId}`, `two:${copy.runId}`, `three:${copy.runId}`]);
    // the original is untouched
    expect(await durable.getRun(first.runId)).toEqual(original);

    // with new input
    const other = await durable.rerun(first.runId, { input: { n: 9 } });
    expect((await durable.waitForRun(other.runId, { timeout: 10_000 })).result).toEqual({
      total: 100,
      input: { n: 9 },
    });
  });

  it('rerun of a failed run is allowed (it is finished)', async () => {
    const { durable } = await createApp({ workflows: [Three] });
    const first = await durable.start('retry_three', { n: 3 });
    expect((await durable.waitForRun(first.runId, { timeout: 10_000 })).status).toBe('failed');
    failSecond = false;
    const copy = await durable.rerun(first.runId);
    expect((await durable.waitForRun(copy.runId, { timeout: 10_000 })).status).toBe('completed');
    expect((await durable.getRun(first.runId))!.status).toBe('failed');
  });

  it('rerun of an unfinished run rejects with NotFinishedError', async () => {
    const { durable } = await createApp({ workflows: [Gated] });
    const pending = await durable.start('retry_gated', {}, { delay: '1h' });
    await expect(durable.rerun(pending.runId)).rejects.toBeInstanceOf(NotFinishedError);
    const running = await durable.start('retry_gated');
    await waitFor(async () => (await durable.getRun(running.runId))?.status === 'running');
    const err = await durable.rerun(running.runId).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NotFinishedError);
    expect((err as NotFinishedError).code).toBe('not_finished');
    gate.open();
    await durable.waitForRun(running.runId, { timeout: 10_000 });
  });
});
