/**
 * Failures are not silent: a run that fails for good is logged at error level through Nest's
 * Logger (context `Durable`) with its run id, workflow, step and error; every failed attempt at
 * debug level.
 */
import { RunContext, Step, Workflow } from '../../src';
import { createApp, RecordingLogger, waitFor } from '../support';

let flakyCalls = 0;

@Workflow('fl_always_fails')
class AlwaysFails {
  @Step()
  async prepare() {
    return 'ready';
  }

  @Step({ retry: { attempts: 3, initialDelay: '10ms', backoff: 'fixed' } })
  async charge(ctx: RunContext<{ card: string }>) {
    throw new Error(`card ${ctx.input.card} declined`);
  }
}

@Workflow('fl_flaky')
class Flaky {
  @Step({ retry: { attempts: 3, initialDelay: '10ms' } })
  async once() {
    if (++flakyCalls === 1) throw new Error('a passing hiccup');
    return 'ok';
  }
}

@Workflow('fl_saga', { retry: { attempts: 1 } })
class Saga {
  @Step({ compensate: 'undo' })
  async book() {}

  @Step()
  async pay() {
    throw new Error('payment refused');
  }

  async undo() {
    throw new Error('cannot undo the booking');
  }
}

@Workflow('fl_never_answered', { timeout: '300ms' })
class NeverAnswered {
  @Step()
  async ask(ctx: RunContext) {
    return ctx.waitForEvent('answer');
  }
}

describe('failure logs', () => {
  it('a final failure is logged at error level with run id, workflow, step, error and stack; each failed attempt at debug level', async () => {
    const logger = new RecordingLogger();
    const { durable } = await createApp({ workflows: [AlwaysFails], logger });
    const { runId } = await durable.start(AlwaysFails, { card: '4242' });
    const run = await durable.waitForRun(runId, { timeout: 30_000 });
    expect(run.status).toBe('failed');

    const errors = logger.find('error', runId);
    expect(errors.map((e) => e.message)).toEqual([`run ${runId} (fl_always_fails) step "charge" failed for good: Error: card 4242 declined`]);
    const [stack, context] = errors[0].rest;
    expect(String(stack)).toMatch(/^Error: card 4242 declined\n\s+at /);
    expect(context).toBe('Durable');

    const attempts = logger.find('debug', runId);
    expect(attempts.map((e) => e.message)).toEqual(
      [1, 2, 3].map((n) => `run ${runId} (fl_always_fails) step "charge" attempt ${n} of 3 failed: Error: card 4242 declined`),
    );
    expect(attempts.every((e) => e.rest.includes('Durable'))).toBe(true);
  });

  it('a run that recovers after a failed attempt logs that attempt at debug level and no error', async () => {
    flakyCalls = 0;
    const logger = new RecordingLogger();
    const { durable } = await createApp({ workflows: [Flaky], logger });
    const { runId } = await durable.start(Flaky, {});
    expect((await durable.waitForRun(runId, { timeout: 30_000 })).status).toBe('completed');
    expect(logger.find('debug', runId).map((e) => e.message)).toEqual([`run ${runId} (fl_flaky) step "once" attempt 1 of 3 failed: Error: a passing hiccup`]);
    expect(logger.find('error', runId)).toEqual([]);
  });

  it('a failed run whose compensation fails logs both failures at error level', async () => {
    const logger = new RecordingLogger();
    const { durable } = await createApp({ workflows: [Saga], logger });
    const { runId } = await durable.start(Saga, {});
    expect((await durable.waitForRun(runId, { timeout: 30_000 })).status).toBe('compensation_failed');
    expect(logger.find('error', runId).map((e) => e.message)).toEqual([
      `run ${runId} (fl_saga) step "pay" failed for good: Error: payment refused`,
      `run ${runId} (fl_saga) step "book": compensation "undo" failed for good: Error: cannot undo the booking`,
    ]);
  });

  it('a waiting run failed by its workflow timeout is logged at error level', async () => {
    const logger = new RecordingLogger();
    const { durable } = await createApp({ workflows: [NeverAnswered], logger });
    const { runId } = await durable.start(NeverAnswered, {});
    const run = await durable.waitForRun(runId, { timeout: 30_000 });
    expect(run).toMatchObject({ status: 'failed', error: { name: 'TimeoutError', code: 'timeout' } });
    // whichever ended it (the worker's timer or the maintenance sweep), the log follows the commit
    await waitFor(() => logger.find('error', runId).length > 0);
    expect(logger.find('error', runId).map((e) => e.message)).toEqual([
      `run ${runId} (fl_never_answered) step "ask" failed for good: TimeoutError: ${(run.error as { message: string }).message}`,
    ]);
  });

  it('a run no worker picked up before its workflow timeout, failed by the maintenance sweep, is logged at error level', async () => {
    const logger = new RecordingLogger();
    // this node's worker runs another workflow only: the sweep is the only one to end the run
    const { durable } = await createApp({ workflows: [NeverAnswered, Flaky], logger, options: { worker: { workflows: ['fl_flaky'] } } });
    const { runId } = await durable.start(NeverAnswered, {});
    const run = await durable.waitForRun(runId, { timeout: 30_000 });
    // the error and line a worker gives a run it claims past its deadline (timeouts-never-begun.spec)
    const message = 'workflow "fl_never_answered" timed out';
    expect(run).toMatchObject({ status: 'failed', attempt: 0, error: { name: 'TimeoutError', code: 'timeout', message, step: 'ask' } });
    await waitFor(() => logger.find('error', runId).length > 0);
    expect(logger.find('error', runId).map((e) => e.message)).toEqual([
      `run ${runId} (fl_never_answered) step "ask" failed for good: TimeoutError: ${message}`,
    ]);
  });
});
