/**
 * Waits: ctx.sleep, ctx.waitForInput / provideInput, the re-run-from-start rule, isSuspension,
 * waits across a restart of the whole app, 1,000 sleeping runs waking on time, timeouts.
 */
import { isSuspension, RunContext, Step, Workflow } from '../../src';
import { createApp, freshSchema, sql, waitFor } from '../support';

const log: string[] = [];
const wokeAt = new Map<string, number>();

@Workflow('w_sleep')
class SleepWf {
  @Step({ retry: { attempts: 1 } })
  async nap(ctx: RunContext<{ ms: number }>) {
    log.push(`nap:start:${ctx.runId}`);
    await ctx.sleep(ctx.input.ms);
    log.push(`nap:after:${ctx.runId}`);
    return { slept: ctx.input.ms };
  }

  @Step()
  async after(ctx: RunContext) {
    log.push(`after:${ctx.runId}`);
    return 'done';
  }
}

@Workflow('w_quick')
class Quick {
  @Step()
  async go(ctx: RunContext) {
    log.push(`quick:${ctx.runId}`);
    return 'quick';
  }
}

@Workflow('w_two_sleeps')
class TwoSleeps {
  @Step({ retry: { attempts: 1 } })
  async twice(ctx: RunContext) {
    log.push(`twice:${ctx.runId}:${ctx.attempt}`);
    await ctx.sleep(150);
    await ctx.sleep(150);
    return 'ok';
  }
}

@Workflow('w_swallow')
class Swallow {
  @Step({ retry: { attempts: 1 } })
  async careless(ctx: RunContext) {
    let seen = false;
    try {
      // long enough for the test to see the run waiting, also under load
      await ctx.sleep(1_500);
    } catch (err) {
      seen = isSuspension(err);
      log.push(`swallowed:${ctx.runId}:${seen}`);
    }
    return { seen };
  }
}

@Workflow('w_many')
class Many {
  @Step({ retry: { attempts: 1 } })
  async sleepy(ctx: RunContext<{ until: number }>) {
    const left = ctx.input.until - Date.now();
    await ctx.sleep(Math.max(0, left));
    if (!wokeAt.has(ctx.runId)) wokeAt.set(ctx.runId, Date.now());
  }
}

@Workflow('w_input')
class Approval {
  @Step()
  async draft(ctx: RunContext) {
    ctx.put('draft', 'v1');
  }

  @Step()
  async approve(ctx: RunContext) {
    log.push(`approve:start:${ctx.runId}`);
    const decision = await ctx.waitForInput<{ ok: boolean; by: string }>('editor_approval');
    return { decision, draft: ctx.get('draft') };
  }
}

@Workflow('w_input_timeout')
class InputTimeout {
  @Step({ retry: { attempts: 1 } })
  async ask(ctx: RunContext) {
    return ctx.waitForInput('answer', { timeout: 300, timeoutValue: 'no answer' });
  }
}

@Workflow('w_deadline', { timeout: '500ms' })
class Deadline {
  @Step()
  async wait(ctx: RunContext) {
    await ctx.sleep('1h');
  }
}

const workflows = [SleepWf, Quick, TwoSleeps, Swallow, Many, Approval, InputTimeout, Deadline];

beforeEach(() => {
  log.length = 0;
  wokeAt.clear();
});

describe('ctx.sleep', () => {
  it('the run waits without a worker slot, then the step re-runs from its start and the sleep returns at once', async () => {
    const { durable } = await createApp({ workflows, concurrency: 1 });
    const t0 = Date.now();
    // long enough for another run to complete meanwhile on a busy machine
    const { runId } = await durable.start('w_sleep', { ms: 5_000 }, { key: 'sleeper' });
    const waiting = await waitFor(async () => {
      const r = await durable.getRun(runId);
      return r?.status === 'waiting' ? r : undefined;
    });
    expect(waiting.waitingFor).toEqual({ kind: 'sleep', name: null, until: expect.any(Date) });
    expect(waiting.holdsKey).toBe(true);
    expect(waiting.nodeId).toBeNull();
    // the only slot is free: another run completes while this one sleeps
    const quick = await durable.start('w_quick');
    expect((await durable.waitForRun(quick.runId, { timeout: 5_000 })).status).toBe('completed');
    expect((await durable.getRun(runId))!.status).toBe('waiting');

    const done = await durable.waitForRun(runId, { timeout: 20_000 });
    expect(done.status).toBe('completed');
    expect(Date.now() - t0).toBeGreaterThanOrEqual(5_000);
    expect(done.result).toBe('done');
    // the step ran twice from its start; the code after the sleep ran once
    expect(log.filter((l) => l === `nap:start:${runId}`)).toHaveLength(2);
    expect(log.filter((l) => l === `nap:after:${runId}`)).toHaveLength(1);
    expect(done.waitingFor).toBeNull();
  });

  it('a waiting run is woken exactly when its recorded wait is due (no claim before the wait ends)', async () => {
    // the run's wake-up time and the wait's end are the same instant: were the run woken earlier
    // (e.g. the end cut to milliseconds on its way through JavaScript), a claim in between would
    // find the wait not yet due and run the step once more for nothing
    const { durable, schema } = await createApp({ workflows, options: { worker: false } });
    const runs = await Promise.all(Array.from({ length: 20 }, (_, i) => durable.start('w_sleep', { ms: 60_000 + i })));
    const worker = await createApp({ workflows, schema });
    await waitFor(async () => {
      const rows = await sql(`SELECT count(*)::int AS n FROM "${schema}".runs WHERE status = 'waiting' AND wake_at IS NOT NULL`);
      return rows[0].n === runs.length;
    });
    const pairs = await sql(`SELECT r.wake_at = w.until AS same FROM "${schema}".runs r JOIN "${schema}".waits w ON w.run_id = r.id AND w.step = r.step`);
    expect(pairs).toHaveLength(runs.length);
    expect(pairs.filter((p) => !p.same)).toEqual([]);
    await worker.close();
  });

  it('several sleeps in one step: each is recorded, none is slept twice (attempts: 1 is enough)', async () => {
    const { durable } = await createApp({ workflows });
    const t0 = Date.now();
    const { runId } = await durable.start('w_two_sleeps');
    const done = await durable.waitForRun(runId, { timeout: 10_000 });
    expect(done.status).toBe('completed');
    expect(Date.now() - t0).toBeGreaterThanOrEqual(300);
    expect(log.filter((l) => l.startsWith(`twice:${runId}`))).toEqual([`twice:${runId}:1`, `twice:${runId}:1`, `twice:${runId}:1`]);
  });

  it('isSuspension(err) is true for the wait signal; swallowing it still suspends the run', async () => {
    const { durable } = await createApp({ workflows });
    const { runId } = await durable.start('w_swallow');
    await waitFor(async () => (await durable.getRun(runId))?.status === 'waiting');
    const done = await durable.waitForRun(runId, { timeout: 10_000 });
    expect(done.status).toBe('completed');
    // first attempt caught the suspension (and was suspended anyway); the re-run slept no more
    expect(log).toEqual([`swallowed:${runId}:true`]);
    expect(done.result).toEqual({ seen: false });
    expect(isSuspension(new Error('x'))).toBe(false);
  });

  it('a sleep spans a restart of the whole app: a new app on the same schema picks the run up', async () => {
    const schema = freshSchema();
    const first = await createApp({ workflows, schema });
    const { runId } = await first.durable.start('w_sleep', { ms: 1_000 });
    await waitFor(async () => (await first.durable.getRun(runId))?.status === 'waiting');
    await first.close();
    const [row] = await sql(`select status from "${schema}".runs where id = $1`, [runId]);
    expect(row.status).toBe('waiting');

    const second = await createApp({ workflows, schema });
    const done = await second.durable.waitForRun(runId, { timeout: 10_000 });
    expect(done.status).toBe('completed');
    expect(log.filter((l) => l === `nap:after:${runId}`)).toHaveLength(1);
  });

  it('1,000 sleeping runs all wake once due, none early, on one worker (default poll interval)', async () => {
    const { durable } = await createApp({ workflows, concurrency: 200, options: { worker: { pollInterval: '1s' } } });
    // room for 1,000 runs to reach their sleep on a busy machine (not all had within 30 s beside the
    // compatibility suite and the packaging test's installs): what is measured is the wake-up
    const due = Date.now() + 45_000;
    const results = await durable.startMany(
      'w_many',
      Array.from({ length: 1_000 }, () => ({ input: { until: due } })),
    );
    const ids = results.map((r) => (r as { runId: string }).runId);
    await waitFor(async () => (await durable.listRuns({ workflow: 'w_many', waitingFor: 'sleep', limit: 1000 })).length === 1_000, {
      timeout: 44_000,
      message: '1000 runs asleep',
    });
    expect(Date.now()).toBeLessThan(due);
    // what is asserted is that every sleeper wakes, once and never early; how soon after due depends
    // on the machine's load (bench/ measures wake-up latency), so the deadline is a generous one
    await waitFor(() => wokeAt.size === 1_000, { timeout: 60_000, message: 'all 1000 woke' });
    const late = ids.map((id) => wokeAt.get(id)! - due);
    expect(Math.min(...late)).toBeGreaterThanOrEqual(0);
    process.stdout.write(`1000 sleepers: latest wake-up ${Math.max(...late)} ms after due\n`);
    await waitFor(async () => (await durable.listRuns({ workflow: 'w_many', status: 'completed', limit: 1000 })).length === 1_000, {
      timeout: 30_000,
    });
  }, 150_000);

  it('a workflow timeout ends a waiting run: failed with a timeout error', async () => {
    const { durable } = await createApp({ workflows });
    const { runId } = await durable.start('w_deadline');
    const done = await durable.waitForRun(runId, { timeout: 10_000 });
    expect(done.status).toBe('failed');
    expect(done.error).toMatchObject({ name: 'TimeoutError' });
  });
});

describe('ctx.waitForInput / provideInput', () => {
  it('the run waits for input (listed as such) and resumes with the value provided', async () => {
    const { durable } = await createApp({ workflows });
    const { runId } = await durable.start('w_input');
    await waitFor(async () => (await durable.getRun(runId))?.status === 'waiting');
    const listed = await durable.listRuns({ waitingFor: 'input' });
    expect(listed.map((r) => r.id)).toEqual([runId]);
    expect(listed[0].waitingFor).toEqual({ kind: 'input', name: 'editor_approval', until: null });
    expect(await durable.listRuns({ waitingFor: 'sleep' })).toEqual([]);

    await durable.provideInput(runId, 'editor_approval', { ok: true, by: 'ed' });
    const done = await durable.waitForRun(runId, { timeout: 10_000 });
    expect(done.status).toBe('completed');
    expect(done.result).toEqual({ decision: { ok: true, by: 'ed' }, draft: 'v1' });
    expect(await durable.listRuns({ waitingFor: 'input' })).toEqual([]);
  });

  it('a wait for input spans a restart of the whole app', async () => {
    const schema = freshSchema();
    const first = await createApp({ workflows, schema });
    const { runId } = await first.durable.start('w_input');
    await waitFor(async () => (await first.durable.getRun(runId))?.status === 'waiting');
    await first.close();
    const second = await createApp({ workflows, schema });
    await second.durable.provideInput(runId, 'editor_approval', { ok: true, by: 'after-restart' });
    const done = await second.durable.waitForRun(runId, { timeout: 10_000 });
    expect(done.result).toEqual({ decision: { ok: true, by: 'after-restart' }, draft: 'v1' });
  });

  it('input provided before the run waits is kept for it', async () => {
    const { durable, schema } = await createApp({ workflows, options: { worker: false } });
    const { runId } = await durable.start('w_input');
    await durable.provideInput(runId, 'editor_approval', { ok: false, by: 'early' });
    const worker = await createApp({ workflows, schema });
    const done = await worker.durable.waitForRun(runId, { timeout: 10_000 });
    expect(done.result).toEqual({ decision: { ok: false, by: 'early' }, draft: 'v1' });
    // it went straight through: the step never waited
    expect(log.filter((l) => l === `approve:start:${runId}`)).toHaveLength(1);
  });

  it('a wait with a timeout returns timeoutValue when nothing comes', async () => {
    const { durable } = await createApp({ workflows });
    const { runId } = await durable.start('w_input_timeout');
    const done = await durable.waitForRun(runId, { timeout: 10_000 });
    expect(done.status).toBe('completed');
    expect(done.result).toBe('no answer');
  });

  it('provideInput to an unknown run rejects with RunNotFoundError', async () => {
    const { durable } = await createApp({ workflows });
    await expect(durable.provideInput('00000000-0000-7000-8000-000000000000', 'x', 1)).rejects.toMatchObject({ code: 'run_not_found' });
  });
});
