import { randomUUID } from 'crypto';
import { DurableValidationError, RunContext, RunNotFoundError, Step, Workflow } from '../../src';
import { createApp, Gate, sql, waitFor } from '../support';

const seen: { step: string; abortedAtEnd?: boolean; heartbeatThrew?: boolean }[] = [];
let inFirst = 0;

@Workflow('cancel_quick')
class Quick {
  @Step()
  async only() {
    return 'done';
  }
}

@Workflow('cancel_long')
class Long {
  @Step()
  async first(ctx: RunContext) {
    inFirst++;
    // a long step that only ends when its signal aborts (or after 20 s, failing the test)
    await new Promise<void>((resolve) => {
      const t = setTimeout(resolve, 20_000);
      ctx.signal.addEventListener('abort', () => {
        clearTimeout(t);
        resolve();
      });
    });
    let heartbeatThrew = false;
    try {
      await ctx.heartbeat();
    } catch {
      heartbeatThrew = true;
    }
    seen.push({ step: 'first', abortedAtEnd: ctx.signal.aborted, heartbeatThrew });
  }

  @Step()
  async second() {
    seen.push({ step: 'second' });
  }
}

let stubbornGate = new Gate();
let stubbornSignal: AbortSignal | undefined;
const stubbornLog: string[] = [];

// ignores its signal: finishes only when the test opens the gate
@Workflow('cancel_stubborn')
class Stubborn {
  @Step()
  async first(ctx: RunContext) {
    stubbornSignal = ctx.signal;
    stubbornLog.push('first');
    await stubbornGate.wait();
    stubbornLog.push('first-returned');
    return 'first done';
  }

  @Step()
  async second() {
    stubbornLog.push('second');
  }
}

const flakyAttempts: number[] = [];
@Workflow('cancel_flaky')
class Flaky {
  @Step({ retry: { attempts: 3, backoff: 'fixed', initialDelay: '1s' } })
  async flaky(ctx: RunContext) {
    flakyAttempts.push(ctx.attempt);
    throw new Error('always fails');
  }
}

let spawnerGate = new Gate();
const spawnerCalls: string[] = [];
@Workflow('cancel_spawned')
class Spawned {
  @Step()
  async only() {
    spawnerCalls.push('child ran');
  }
}

// starts a child after its run was cancelled, before a heartbeat could tell it
@Workflow('cancel_spawner')
class Spawner {
  @Step()
  async spawn(ctx: RunContext) {
    await spawnerGate.wait();
    try {
      return await ctx.callWorkflow(Spawned, {});
    } catch (err) {
      spawnerCalls.push(`callWorkflow threw ${(err as Error).name}: ${(err as Error).message}`);
      throw err;
    }
  }
}

describe('cancel', () => {
  beforeEach(() => {
    seen.length = 0;
    inFirst = 0;
    stubbornGate = new Gate();
    spawnerGate = new Gate();
    spawnerCalls.length = 0;
    stubbornSignal = undefined;
    stubbornLog.length = 0;
    flakyAttempts.length = 0;
  });
  afterEach(() => {
    stubbornGate.open();
    spawnerGate.open();
  });

  it('a step that calls a child workflow after its run was cancelled (before a heartbeat told it) starts no child', async () => {
    // a heartbeat far away: only the parent's row can tell the call that the run is gone
    const { durable, schema } = await createApp({ workflows: [Spawner, Spawned], options: { heartbeatInterval: '10s', nodeTimeout: '30s' } });
    const { runId } = await durable.start(Spawner, {});
    await waitFor(() => spawnerGate.arrived === 1, { message: 'the step runs' });
    await durable.cancel(runId);
    spawnerGate.open();
    await waitFor(() => spawnerCalls.length > 0, { message: 'the step called the child workflow' });
    // refused by the parent's row, not by a heartbeat's news (that message says nothing of children)
    expect(spawnerCalls).toEqual([`callWorkflow threw CancelledError: run ${runId} is no longer owned by this execution; its children were not started`]);
    expect(await durable.getRun(runId)).toMatchObject({ status: 'cancelled' });
    expect(await sql(`SELECT id FROM "${schema}".runs WHERE parent_id = $1`, [runId])).toEqual([]);
  });

  it('a step that ignores the abort and returns later: its completion is not recorded and no later step runs', async () => {
    const { durable } = await createApp({ workflows: [Stubborn, Quick] });
    const { runId } = await durable.start('cancel_stubborn');
    await waitFor(() => stubbornSignal !== undefined);
    await durable.cancel(runId);
    await waitFor(() => stubbornSignal!.aborted, { timeout: 5_000, message: 'the abort is seen at the next heartbeat' });
    stubbornGate.open();
    await waitFor(() => stubbornLog.includes('first-returned'));
    const barrier = await durable.start('cancel_quick');
    await durable.waitForRun(barrier.runId, { timeout: 10_000 });
    expect(stubbornLog).toEqual(['first', 'first-returned']);
    expect(await durable.getRun(runId)).toMatchObject({ status: 'cancelled', result: null, step: 'first' });
  });

  it('cancelling a run waiting between retry attempts: it is cancelled and never attempted again', async () => {
    const { durable } = await createApp({ workflows: [Flaky, Quick] });
    const { runId } = await durable.start('cancel_flaky');
    await waitFor(async () => flakyAttempts.length === 1 && (await durable.getRun(runId))?.error != null);
    await durable.cancel(runId);
    expect((await durable.getRun(runId))!.status).toBe('cancelled');
    // past the 1s retry delay, the worker has had every chance to attempt it again
    const later = await durable.start('cancel_quick', {}, { delay: '1500ms' });
    await durable.waitForRun(later.runId, { timeout: 10_000 });
    expect(flakyAttempts).toEqual([1]);
    expect((await durable.getRun(runId))!.status).toBe('cancelled');
  });

  it('cancels a pending run: it becomes cancelled and never runs', async () => {
    const { durable } = await createApp({ workflows: [Long, Quick] });
    const { runId } = await durable.start('cancel_long', {}, { delay: '1h' });
    expect((await durable.getRun(runId))!.status).toBe('pending');
    await durable.cancel(runId, { reason: 'not needed' });
    const run = await durable.waitForRun(runId, { timeout: 5_000 });
    expect(run.status).toBe('cancelled');
    expect(run.finishedAt).toBeInstanceOf(Date);
    expect(inFirst).toBe(0);
  });

  it('a running step sees ctx.signal.aborted at the next heartbeat, and no later step runs', async () => {
    const { durable } = await createApp({ workflows: [Long, Quick] });
    const { runId } = await durable.start('cancel_long');
    await waitFor(() => inFirst === 1);
    const t0 = Date.now();
    await durable.cancel(runId);
    const run = await durable.waitForRun(runId, { timeout: 10_000 });
    // heartbeatInterval is 200ms in the tests: the abort is seen well within a few heartbeats
    await waitFor(() => seen.length >= 1, { timeout: 5_000 });
    expect(Date.now() - t0).toBeLessThan(5_000);
    expect(run.status).toBe('cancelled');
    expect(seen[0]).toEqual({ step: 'first', abortedAtEnd: true, heartbeatThrew: true });
    // the run is final: the second step never starts, even after the worker has gone on working
    const barrier = await durable.start('cancel_quick');
    await durable.waitForRun(barrier.runId, { timeout: 10_000 });
    expect(seen.filter((s) => s.step === 'second')).toEqual([]);
    expect((await durable.getRun(runId))!.status).toBe('cancelled');
  });

  it('a reason that is not a storable string of 1 to 1000 bytes, or a reason where the options go, is refused and nothing is cancelled', async () => {
    const { durable, schema } = await createApp({ workflows: [Long, Quick] });
    const { runId } = await durable.start('cancel_long', {}, { delay: '1h' });
    const refusals: [unknown, RegExp][] = [
      [{ reason: 'a\u0000b' }, /^cancel: reason holds a NUL character/],
      [{ reason: 'a\uD800b' }, /^cancel: reason holds a NUL character or an unpaired UTF-16 surrogate/],
      [{ reason: 42 }, /^cancel: reason must be a string of 1 to 1000 bytes/],
      [{ reason: '' }, /^cancel: reason must be a string of 1 to 1000 bytes/],
      [{ reason: 'é'.repeat(501) }, /^cancel: reason must be a string of 1 to 1000 bytes/],
      ['customer asked', /^cancel: options must be an object of options \(reason\)/],
    ];
    for (const [options, message] of refusals) {
      const err = await durable.cancel(runId, options as never).catch((e: Error) => e);
      expect(err).toBeInstanceOf(DurableValidationError);
      expect((err as Error).message).toMatch(message);
    }
    expect((await durable.getRun(runId))!.status).toBe('pending');
    // null options are no options; the longest reason is kept as given
    await durable.cancel(runId, null as never);
    expect(await sql(`select status, cancel_reason from "${schema}".runs where id = $1`, [runId])).toEqual([{ status: 'cancelled', cancel_reason: null }]);
    const other = await durable.start('cancel_long', {}, { delay: '1h' });
    await durable.cancel(other.runId, { reason: 'é'.repeat(500) });
    expect(await sql(`select cancel_reason from "${schema}".runs where id = $1`, [other.runId])).toEqual([{ cancel_reason: 'é'.repeat(500) }]);
  });

  it('cancelling a finished run leaves it as it was', async () => {
    const { durable } = await createApp({ workflows: [Quick] });
    const { runId } = await durable.start('cancel_quick');
    await durable.waitForRun(runId, { timeout: 10_000 });
    await durable.cancel(runId).catch(() => undefined);
    expect((await durable.getRun(runId))!).toMatchObject({ status: 'completed', result: 'done' });
  });

  it('rejects an unknown run id with RunNotFoundError', async () => {
    const { durable } = await createApp({ workflows: [Long, Quick] });
    const err = await durable.cancel(randomUUID()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RunNotFoundError);
    // an id that is not even a run id is just as unknown
    await expect(durable.cancel('not-a-run-id')).rejects.toBeInstanceOf(RunNotFoundError);
  });
});
