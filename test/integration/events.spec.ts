/**
 * ctx.waitForEvent + DurableService.sendEvent: delivered / kept / dropped, the buffer rules, one
 * event per name per run (newest kept one wins, later ones never read), an unbuffered event sent
 * before the wait (dropped), timeouts, and a race of many sends against suspensions.
 */
import { Client } from 'pg';
import { RunContext, Step, TimeoutError, Workflow } from '../../src';
import { deliverEvent } from '../../src/runs/event-delivery';
import { EventsStore } from '../../src/store/events.store';
import { clientQueryable } from '../../src/store/db';
import { createApp, databaseUrl, Gate, raceWaitTimeout, sql, waitFor, waitForLockWait } from '../support';

const got: Record<string, unknown[]> = {};
let gate = new Gate();
const push = (id: string, v: unknown) => (got[id] ??= []).push(v);

@Workflow('e_wait')
class WaitOne {
  @Step()
  async listen(ctx: RunContext) {
    const p = await ctx.waitForEvent<{ n: number }>('go');
    push(ctx.runId, p);
    return p;
  }
}

@Workflow('e_twice')
class WaitTwice {
  @Step()
  async first(ctx: RunContext) {
    return ctx.waitForEvent('ping');
  }

  @Step()
  async second(ctx: RunContext) {
    // long enough for the test to send its second "ping" while the run sleeps, also under load
    await ctx.sleep(2_000);
    // a later wait for the same name returns the same payload
    return ctx.waitForEvent('ping');
  }
}

@Workflow('e_gated')
class Gated {
  @Step()
  async work(ctx: RunContext) {
    push(ctx.runId, 'work');
    await gate.wait(ctx.signal);
  }

  @Step()
  async listen(ctx: RunContext) {
    return ctx.waitForEvent('late');
  }
}

@Workflow('e_midstep')
class MidStep {
  @Step()
  async both(ctx: RunContext) {
    push(ctx.runId, `attempt`);
    await gate.wait(ctx.signal);
    return ctx.waitForEvent('update');
  }
}

let timeoutAttempts = 0;
@Workflow('e_timeout')
class Timeout {
  @Step({ retry: { attempts: 3, initialDelay: '2s' } })
  async listen(ctx: RunContext<{ value?: boolean }>) {
    timeoutAttempts++;
    return ctx.input?.value ? ctx.waitForEvent('never', { timeout: 250, timeoutValue: { none: true } }) : ctx.waitForEvent('never', { timeout: 250 });
  }
}

@Workflow('e_timeout_late')
class TimeoutLate {
  @Step()
  async listen(ctx: RunContext) {
    return ctx.waitForEvent('go', { timeout: 1_500, timeoutValue: { none: true } });
  }
}

/** Bodies run of e_timeout_retry; it fails once its wait has timed out while `breakAfterWait`. */
let valueBodies = 0;
let breakAfterWait = true;
@Workflow('e_timeout_retry')
class TimeoutThenBreak {
  @Step({ retry: { attempts: 1 } })
  async listen(ctx: RunContext<{ value: boolean }>) {
    valueBodies++;
    const got = ctx.input.value
      ? await ctx.waitForEvent('never', { timeout: 250, timeoutValue: 'fallback' })
      : await ctx.waitForEvent('never', { timeout: 250 });
    if (breakAfterWait) throw new Error('broke after the wait');
    return got;
  }
}

@Workflow('e_sleeper')
class Sleeper {
  @Step()
  async nap(ctx: RunContext) {
    // long enough for the test's early "go" to arrive while the run sleeps, also under load
    await ctx.sleep(2_000);
  }

  @Step()
  async listen(ctx: RunContext) {
    return ctx.waitForEvent('go', { timeout: 300, timeoutValue: 'timed out' });
  }
}

@Workflow('e_race')
class Race {
  @Step({ retry: { attempts: 1 } })
  async listen(ctx: RunContext<{ i: number }>) {
    return ctx.waitForEvent('x');
  }
}

@Workflow('e_hit')
class Hit {
  @Step({ retry: { attempts: 1 } })
  async listen(ctx: RunContext) {
    push(ctx.runId, 'attempt');
    await gate.wait(ctx.signal);
    return ctx.waitForEvent('hit');
  }
}

const workflows = [WaitOne, WaitTwice, Gated, MidStep, Timeout, Sleeper, Race, Hit];

beforeEach(() => {
  for (const k of Object.keys(got)) delete got[k];
  gate = new Gate();
});

const status = (durable: { getRun(id: string): Promise<{ status: string } | null> }, id: string, s: string) =>
  waitFor(async () => (await durable.getRun(id))?.status === s, { message: `run ${id} is ${s}` });

describe('sendEvent / waitForEvent', () => {
  it("a run waiting for the event gets it and resumes: 'delivered'", async () => {
    const { durable } = await createApp({ workflows });
    const { runId } = await durable.start('e_wait', undefined, { key: 'k1' });
    await status(durable, runId, 'waiting');
    const run = await durable.getRun(runId);
    expect(run!.waitingFor).toEqual({ kind: 'event', name: 'go', until: null });
    expect(run!.holdsKey).toBe(true);
    expect(await durable.sendEvent(runId, 'go', { n: 1 })).toBe('delivered');
    const done = await durable.waitForRun(runId, { timeout: 10_000 });
    expect(done.status).toBe('completed');
    expect(done.result).toEqual({ n: 1 });
    // after it finished, events are dropped
    expect(await durable.sendEvent(runId, 'go', { n: 2 }, { buffer: true })).toBe('dropped');
  });

  it("an event for another name, or before the run waits, without buffer: 'dropped'", async () => {
    const { durable } = await createApp({ workflows });
    const { runId } = await durable.start('e_wait');
    await status(durable, runId, 'waiting');
    expect(await durable.sendEvent(runId, 'other', 1)).toBe('dropped');
    const s = await durable.start('e_sleeper');
    await status(durable, s.runId, 'waiting'); // asleep, not waiting for "go"
    expect(await durable.sendEvent(s.runId, 'go', 'early')).toBe('dropped');
    const done = await durable.waitForRun(s.runId, { timeout: 10_000 });
    expect(done.result).toBe('timed out');
  });

  it('buffer: true keeps an event sent before the wait; of several kept the wait gets the newest; a later wait gets the same', async () => {
    const { durable, schema } = await createApp({ workflows });
    const { runId } = await durable.start('e_gated');
    await waitFor(() => got[runId]?.length === 1);
    // the run is mid-step (not waiting for "late"): buffered sends are kept
    expect(await durable.sendEvent(runId, 'late', { v: 1 }, { buffer: true })).toBe('kept');
    expect(await durable.sendEvent(runId, 'late', { v: 2 }, { buffer: true })).toBe('kept');
    gate.open();
    const done = await durable.waitForRun(runId, { timeout: 10_000 });
    expect(done.result).toEqual({ v: 2 });

    const t = await durable.start('e_twice');
    await status(durable, t.runId, 'waiting');
    expect(await durable.sendEvent(t.runId, 'ping', 'A')).toBe('delivered');
    await waitFor(async () => {
      const run = await durable.getRun(t.runId);
      return run?.step === 'second' && run.status === 'waiting';
    });
    // sent after the run got its "ping": kept, never read
    expect(await durable.sendEvent(t.runId, 'ping', 'B', { buffer: true })).toBe('kept');
    const twice = await durable.waitForRun(t.runId, { timeout: 10_000 });
    expect(twice.status).toBe('completed');
    expect(twice.result).toBe('A');
    const rows = await sql(`select payload, received_at is not null as received from "${schema}".events where run_id = $1 order by id`, [t.runId]);
    expect(rows).toEqual([
      { payload: 'A', received: true },
      { payload: 'B', received: false },
    ]);
  });

  it('without buffer, an event sent before the step reaches its wait is dropped (running or pending); with buffer it is kept', async () => {
    const { durable } = await createApp({ workflows });
    const { runId } = await durable.start('e_midstep');
    await waitFor(() => got[runId]?.length === 1);
    expect((await durable.getRun(runId))!.status).toBe('running');
    expect(await durable.sendEvent(runId, 'update', { stale: true })).toBe('dropped');
    expect(await durable.sendEvent(runId, 'update', { fresh: true }, { buffer: true })).toBe('kept');
    gate.open();
    const done = await durable.waitForRun(runId, { timeout: 10_000 });
    expect(done).toMatchObject({ status: 'completed', result: { fresh: true } });
    expect(got[runId]).toHaveLength(1); // the kept event was there when it waited: it never suspended

    const idle = await createApp({ workflows, options: { worker: false } });
    const pending = (await idle.durable.start('e_midstep')).runId;
    expect(await idle.durable.sendEvent(pending, 'update', {})).toBe('dropped');
    expect(await sql(`select 1 from "${idle.schema}".events where run_id = $1`, [pending])).toEqual([]);
  });

  it('on timeout the wait returns timeoutValue, or throws TimeoutError when none was given', async () => {
    const { durable } = await createApp({ workflows });
    const a = await durable.start('e_timeout', { value: true });
    const b = await durable.start('e_timeout', { value: false });
    const [ra, rb] = await Promise.all([a, b].map((r) => durable.waitForRun(r.runId, { timeout: 10_000 })));
    expect(ra.status).toBe('completed');
    expect(ra.result).toEqual({ none: true });
    expect(rb.status).toBe('failed');
    expect(rb.error).toMatchObject({ name: TimeoutError.name, code: 'timeout' });
    // a timed-out wait fails the step for good (a retry would time out the same way): each run's
    // step ran twice (first try, after the timer), no retry with its 2 s backoff
    expect(timeoutAttempts).toBe(4);
  });

  it('an event sent as its wait times out is either its answer or dropped, never kept for nothing', async () => {
    const { durable, schema } = await createApp({ workflows: [TimeoutLate] });
    await raceWaitTimeout(durable, schema, TimeoutLate, async ({ runId, unblock }) => {
      const sent = durable.sendEvent(runId, 'go', { late: true });
      // the send either waits for the run the step holds, or stores its event before the lock ends
      await waitFor(
        async () =>
          (await sql(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock'`))[0].n >= 2 ||
          (await sql(`SELECT 1 FROM "${schema}".events`)).length > 0,
        { message: 'the send is under way' },
      );
      await unblock();
      const outcome = await sent;
      const run = await durable.waitForRun(runId, { timeout: 10_000 });
      expect([outcome, run.result]).toEqual(outcome === 'kept' ? ['kept', { late: true }] : ['dropped', { none: true }]);
    });
  });

  it('retry replays a wait that returned its timeoutValue, and waits anew where the timeout failed the step', async () => {
    const { durable } = await createApp({ workflows: [TimeoutThenBreak] });
    const bodies = async (value: boolean) => {
      valueBodies = 0;
      breakAfterWait = true;
      const { runId } = await durable.start(TimeoutThenBreak, { value });
      expect(await durable.waitForRun(runId, { timeout: 10_000 })).toMatchObject({ status: 'failed' });
      // the body ran until the wait suspended, then again once its timer ended
      expect(valueBodies).toBe(2);
      breakAfterWait = false;
      await durable.retry(runId);
      return { run: await durable.waitForRun(runId, { timeout: 10_000 }), afterRetry: valueBodies - 2 };
    };
    // the step had gone on with the value: the retry's body gets it again at once
    expect(await bodies(true)).toMatchObject({ run: { status: 'completed', result: 'fallback' }, afterRetry: 1 });
    // the timeout had failed the step: the retry waits again (suspends, then times out again)
    expect(await bodies(false)).toMatchObject({ run: { status: 'failed', error: { code: 'timeout' } }, afterRetry: 2 });
  });

  it('sendEvent to an unknown run rejects with RunNotFoundError; a bad name or payload is refused', async () => {
    const { durable } = await createApp({ workflows });
    await expect(durable.sendEvent('00000000-0000-7000-8000-000000000000', 'x')).rejects.toMatchObject({ code: 'run_not_found' });
    await expect(durable.sendEvent('nope', 'x')).rejects.toMatchObject({ code: 'run_not_found' });
    const { runId } = await durable.start('e_wait');
    await expect(durable.sendEvent(runId, '', 1)).rejects.toMatchObject({ code: 'invalid' });
    await expect(durable.sendEvent(runId, 'g'.repeat(256), 1)).rejects.toMatchObject({ code: 'invalid' });
    await expect(durable.sendEvent(runId, 'go\u0000', 1)).rejects.toMatchObject({ code: 'invalid' }); // not a raw database error
    await expect(durable.sendEvent(runId, 'go', { n: BigInt(1) })).rejects.toMatchObject({ code: 'invalid' });
  });

  it('a flag where the options go, or a buffer that is not a boolean, is refused with nothing kept; null options are none', async () => {
    const { durable, schema } = await createApp({ workflows, options: { worker: false } });
    const { runId } = await durable.start('e_midstep');
    const refusals: [unknown, RegExp][] = [
      [true, /^sendEvent: options must be an object of options \(buffer\)/],
      ['buffer', /^sendEvent: options must be an object of options/],
      [{ buffer: 'false' }, /^sendEvent: buffer must be a boolean/],
      [{ buffer: 1 }, /^sendEvent: buffer must be a boolean/],
    ];
    for (const [options, message] of refusals) {
      const err = await durable.sendEvent(runId, 'update', { v: 1 }, options as never).catch((e: Error) => e);
      expect(err).toMatchObject({ code: 'invalid', message: expect.stringMatching(message) });
    }
    expect(await sql(`select 1 from "${schema}".events where run_id = $1`, [runId])).toEqual([]);
    expect(await durable.sendEvent(runId, 'update', { v: 2 }, null as never)).toBe('dropped');
    expect(await durable.sendEvent(runId, 'update', { v: 3 }, { buffer: true })).toBe('kept');
    expect(await sql(`select payload from "${schema}".events where run_id = $1`, [runId])).toEqual([{ payload: { v: 3 } }]);
  });

  it('an event kept between "no event yet" and the suspension\'s write resumes the run at once', async () => {
    const app = await createApp({ workflows });
    const { durable, schema } = app;
    const { runId } = await durable.start('e_hit');
    await waitFor(() => got[runId]?.length === 1);
    const client = new Client({ connectionString: databaseUrl() });
    await client.connect();
    try {
      await client.query('BEGIN');
      await client.query(`select 1 from "${schema}".runs where id = $1 for no key update`, [runId]); // not FOR UPDATE: the step's waits insert (FK) must pass
      gate.open(); // the step finds no event and suspends: its write now waits for our row lock
      await waitForLockWait([`UPDATE "${schema}".runs r SET`], 'the suspension write is blocked on the run row');
      // the run is still `running`: the event is kept (and marked on the run), then we commit
      expect(await deliverEvent(app.get(EventsStore), clientQueryable(client), runId, 'hit', { late: true })).toBe('kept');
      await client.query('COMMIT');
    } finally {
      await client.end();
    }
    const done = await durable.waitForRun(runId, { timeout: 10_000 });
    expect(done.status).toBe('completed');
    expect(done.result).toEqual({ late: true });
    expect(got[runId]).toHaveLength(2); // suspended once, resumed at once
  });

  it('race: 100 runs, each sent its event at a random moment around its wait, all complete with it', async () => {
    const { durable } = await createApp({ workflows, concurrency: 20 });
    const results = await durable.startMany(
      'e_race',
      Array.from({ length: 100 }, (_, i) => ({ input: { i } })),
    );
    const ids = results.map((r) => (r as { runId: string }).runId);
    const outcomes = await Promise.all(
      ids.map(async (id, i) => {
        await new Promise((r) => setTimeout(r, Math.random() * 150));
        return durable.sendEvent(id, 'x', { i }, { buffer: true });
      }),
    );
    expect(outcomes.every((o) => o === 'delivered' || o === 'kept')).toBe(true);
    const runs = await Promise.all(ids.map((id) => durable.waitForRun(id, { timeout: 20_000 })));
    expect(runs.map((r) => r.status)).toEqual(Array(100).fill('completed'));
    expect(runs.map((r) => r.result)).toEqual(ids.map((_, i) => ({ i })));
  });
});
