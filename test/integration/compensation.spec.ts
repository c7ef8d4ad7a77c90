/**
 * Sagas: @Step({ compensate }) — compensations of completed steps run in reverse order when a run
 * fails for good (compensating → compensated / compensation_failed), with retries and the run's
 * context; cancel does not compensate; a compensating run cannot be cancelled; a workflow timeout
 * compensates.
 */
import { NotCancellableError, RunContext, Step, Workflow } from '../../src';
import { createApp, Gate, waitFor } from '../support';

const log: string[] = [];
let gate = new Gate();

@Workflow('c_trip', { retry: { attempts: 1 } })
class Trip {
  @Step({ compensate: 'cancelFlight' })
  async bookFlight(ctx: RunContext<{ failAt?: string }>) {
    log.push('bookFlight');
    ctx.put('flight', 'F1');
  }

  @Step()
  async notify() {
    log.push('notify');
  }

  @Step({ compensate: 'cancelHotel' })
  async bookHotel(ctx: RunContext<{ failAt?: string }>) {
    log.push('bookHotel');
    ctx.put('hotel', 'H1');
  }

  @Step({ compensate: 'neverRuns' })
  async pay(ctx: RunContext<{ failAt?: string }>) {
    log.push('pay');
    if (ctx.input.failAt === 'pay') throw new Error('card declined');
  }

  async cancelFlight(ctx: RunContext) {
    log.push(`cancelFlight:${ctx.get('flight')}:${ctx.get('hotel') ?? '-'}`);
  }

  async cancelHotel(ctx: RunContext) {
    log.push(`cancelHotel:${ctx.get('hotel')}`);
    await gate.wait(ctx.signal);
  }

  async neverRuns() {
    log.push('neverRuns');
  }
}

let flakyFails = 0;
@Workflow('c_flaky_comp')
class FlakyComp {
  @Step({ compensate: 'undoA', retry: { attempts: 2, initialDelay: '50ms' } })
  async a() {
    log.push('a');
  }

  @Step({ compensate: 'undoB', retry: { attempts: 3, initialDelay: '50ms', backoff: 'fixed' } })
  async b() {
    log.push('b');
  }

  @Step({ retry: { attempts: 1 } })
  async c() {
    throw new Error('c broke');
  }

  async undoA(ctx: RunContext) {
    log.push(`undoA:${ctx.attempt}`);
  }

  async undoB(ctx: RunContext<{ failures: number }>) {
    log.push(`undoB:${ctx.attempt}`);
    if (flakyFails++ < ctx.input.failures) throw new Error(`undoB failed (${ctx.attempt})`);
  }
}

@Workflow('c_cancel')
class CancelMe {
  @Step({ compensate: 'undo' })
  async first() {
    log.push('first');
  }

  @Step()
  async second(ctx: RunContext) {
    log.push('second');
    await gate.wait(ctx.signal);
  }

  async undo() {
    log.push('undo');
  }
}

@Workflow('c_timeout', { timeout: '600ms' })
class TimesOut {
  @Step({ compensate: 'undo' })
  async first() {
    log.push('first');
  }

  @Step()
  async second(ctx: RunContext) {
    await ctx.waitForEvent('never');
  }

  async undo() {
    log.push('undo');
  }
}

// one attempt per step and compensation: a compensation failed by the passed deadline would end compensation_failed
@Workflow('c_timeout_running', { timeout: '600ms', retry: { attempts: 1 } })
class TimesOutRunning {
  @Step({ compensate: 'undo' })
  async first() {
    log.push('first');
  }

  @Step()
  async second(ctx: RunContext) {
    log.push('second');
    // a long step that ignores its signal until the test opens the gate, after the run compensated:
    // the deadline aborted the signal, and it is still aborted once the compensation ran
    await gate.wait();
    log.push(`aborted:${ctx.signal.aborted}`);
  }

  async undo(ctx: RunContext) {
    log.push(`undo:aborted=${ctx.signal.aborted}`);
  }
}

@Workflow('c_none', { retry: { attempts: 1 } })
class NoCompensation {
  @Step()
  async only() {
    throw new Error('plain failure');
  }
}

const workflows = [Trip, FlakyComp, CancelMe, TimesOut, TimesOutRunning, NoCompensation];

beforeEach(() => {
  log.length = 0;
  gate = new Gate();
  flakyFails = 0;
});

describe('compensation', () => {
  it('a run that fails for good compensates its completed steps in reverse order, with its context', async () => {
    const { durable } = await createApp({ workflows });
    const { runId } = await durable.start('c_trip', { failAt: 'pay' }, { key: 'trip-1' });
    await waitFor(() => log.includes('cancelHotel:H1'));
    const mid = await durable.getRun(runId);
    expect(mid!.status).toBe('compensating');
    expect(mid!.holdsKey).toBe(true);
    // a compensating run cannot be cancelled
    const err = await durable.cancel(runId).catch((e) => e);
    expect(err).toBeInstanceOf(NotCancellableError);
    expect(err.code).toBe('not_cancellable');
    gate.open();
    const done = await durable.waitForRun(runId, { timeout: 10_000 });
    expect(done.status).toBe('compensated');
    expect(done.error).toMatchObject({ message: 'card declined', step: 'pay' });
    expect(log).toEqual(['bookFlight', 'notify', 'bookHotel', 'pay', 'cancelHotel:H1', 'cancelFlight:F1:H1']);
    expect(done.finishedAt).not.toBeNull();
  });

  it('a compensation is retried per its step policy; compensated when it finally succeeds', async () => {
    const { durable } = await createApp({ workflows });
    const { runId } = await durable.start('c_flaky_comp', { failures: 2 });
    const done = await durable.waitForRun(runId, { timeout: 10_000 });
    expect(done.status).toBe('compensated');
    expect(log).toEqual(['a', 'b', 'undoB:1', 'undoB:2', 'undoB:3', 'undoA:1']);
    expect(done.error).toMatchObject({ message: 'c broke' });
    expect((done.error as Record<string, unknown>).compensation).toBeUndefined();
    // the history has every attempt of the compensations too, after the steps'
    const history = (await durable.getRunHistory(runId)).map((h) => [
      h.name,
      h.step,
      h.compensation ?? false,
      h.attempt,
      h.status,
      (h.error as { message?: string })?.message,
    ]);
    expect(history).toEqual([
      ['a', 0, false, 1, 'completed', undefined],
      ['b', 1, false, 1, 'completed', undefined],
      ['c', 2, false, 1, 'failed', 'c broke'],
      ['undoB', 1, true, 1, 'failed', 'undoB failed (1)'],
      ['undoB', 1, true, 2, 'failed', 'undoB failed (2)'],
      ['undoB', 1, true, 3, 'completed', undefined],
      ['undoA', 0, true, 1, 'completed', undefined],
    ]);
  });

  it('a compensation that fails after its retries: compensation_failed, the rest do not run', async () => {
    const { durable } = await createApp({ workflows });
    const { runId } = await durable.start('c_flaky_comp', { failures: 10 });
    const done = await durable.waitForRun(runId, { timeout: 10_000 });
    expect(done.status).toBe('compensation_failed');
    expect(log).toEqual(['a', 'b', 'undoB:1', 'undoB:2', 'undoB:3']);
    expect(done.error).toMatchObject({
      message: 'c broke',
      compensation: { step: 'b', method: 'undoB', attempt: 3, error: { message: 'undoB failed (3)' } },
    });
    const last = (await durable.getRunHistory(runId)).pop();
    expect(last).toMatchObject({ name: 'undoB', compensation: true, attempt: 3, status: 'failed', error: { message: 'undoB failed (3)' } });
  });

  it('cancel does not run compensations', async () => {
    const { durable } = await createApp({ workflows });
    const { runId } = await durable.start('c_cancel');
    await waitFor(() => log.includes('second'));
    await durable.cancel(runId, { reason: 'user' });
    gate.open();
    const done = await durable.waitForRun(runId, { timeout: 10_000 });
    expect(done.status).toBe('cancelled');
    await new Promise((r) => setTimeout(r, 300)); // give a wrong compensation a chance to show up
    expect(log).toEqual(['first', 'second']);
  });

  it('a workflow timeout fails the run and its compensations run', async () => {
    const { durable } = await createApp({ workflows });
    const { runId } = await durable.start('c_timeout');
    const done = await durable.waitForRun(runId, { timeout: 10_000 });
    expect(done.status).toBe('compensated');
    expect(done.error).toMatchObject({ name: 'TimeoutError' });
    expect(log).toEqual(['first', 'undo']);
  });

  it('a workflow timeout during a running step aborts it, fails the run and compensates', async () => {
    const { durable } = await createApp({ workflows });
    const { runId } = await durable.start('c_timeout_running');
    const done = await durable.waitForRun(runId, { timeout: 10_000 });
    expect(done.status).toBe('compensated');
    expect(done.error).toMatchObject({ name: 'TimeoutError', step: 'second' });
    // the compensation ran once, on this node, after the deadline, with a live signal
    expect(log).toEqual(['first', 'second', 'undo:aborted=false']);
    gate.open();
    await waitFor(() => log.length === 4, { message: 'the abandoned step went on' });
    expect(log[3]).toBe('aborted:true');
  });

  it('without compensations a final failure is plain failed', async () => {
    const { durable } = await createApp({ workflows });
    const { runId } = await durable.start('c_none');
    const done = await durable.waitForRun(runId, { timeout: 10_000 });
    expect(done.status).toBe('failed');
  });
});
