/**
 * Queue controls: pause/resume (stored in the database, obeyed by every node), priorities (higher
 * first among due runs), `ctx.progress` (visible while the step runs), and the refusal of bad
 * values with `DurableValidationError` naming the option.
 */
import { DurableValidationError, RunContext, Step, UnknownWorkflowError, Workflow } from '../../src';
import { runCli } from '../../src/cli/cli';
import { createApp, databaseUrl, freshSchema, Gate, ident, sql, waitFor } from '../support';

/** Run order of the priority workflows, by input label. */
const order: string[] = [];

@Workflow('qc_low')
class Low {
  @Step()
  async run(ctx: RunContext<string>) {
    order.push(ctx.input);
  }
}

@Workflow('qc_high', { priority: 10 })
class High {
  @Step()
  async run(ctx: RunContext<string>) {
    order.push(ctx.input);
  }
}

@Workflow('qc_limited', { concurrency: 1 })
class Limited {
  @Step()
  async run(ctx: RunContext<string>) {
    order.push(ctx.input);
  }
}

@Workflow('qc_rated', { rateLimit: { limit: 3, period: '400ms' } })
class Rated {
  @Step()
  async run() {}
}

/** Two steps with a durable sleep between them: the second is claimed as a woken run. */
const napped: string[] = [];
@Workflow('qc_napping', { concurrency: 1 })
class Napping {
  @Step()
  async nap(ctx: RunContext<string>) {
    await ctx.sleep('150ms');
  }
  @Step()
  async wake(ctx: RunContext<string>) {
    napped.push(ctx.input);
  }
}

/** Reports progress, then waits until the test lets it finish. */
const gate = { open: false };
@Workflow('qc_progress')
class Progress {
  @Step()
  async work(ctx: RunContext) {
    ctx.progress({ done: 1, of: 3 });
    ctx.progress({ done: 2, of: 3 });
    while (!gate.open) await new Promise((r) => setTimeout(r, 10));
    ctx.progress({ done: 3, of: 3 });
    return 'done';
  }
}

/** A step that runs until released: "running ones finish" after a pause. */
const held = { release: false, started: 0 };
@Workflow('qc_slow')
class Slow {
  @Step()
  async work(ctx: RunContext<number>) {
    held.started++;
    while (!held.release) await new Promise((r) => setTimeout(r, 10));
    return ctx.input;
  }
}

const statusOf = async (t: { durable: { getRun(id: string): Promise<{ status: string } | null> } }, id: string) => (await t.durable.getRun(id))?.status;

describe('pause / resume', () => {
  it('a pause made on one node holds the workflow on every node (running steps finish); resume lets them claim at once', async () => {
    const schema = freshSchema();
    const a = await createApp({ workflows: [Slow, Low], schema });
    const b = await createApp({ workflows: [Slow, Low], schema });
    held.release = false;
    held.started = 0;
    const running = await a.durable.start(Slow, 1);
    await waitFor(() => held.started === 1);
    await a.durable.pause(Slow);
    expect((await b.durable.listWorkflows()).find((w) => w.name === 'qc_slow')).toMatchObject({ paused: true, options: { priority: 0 } });
    expect((await b.durable.listWorkflows()).find((w) => w.name === 'qc_low')?.paused).toBe(false);
    const waiting = await Promise.all([2, 3, 4].map((n) => b.durable.start(Slow, n)));
    // both nodes claim runs of other workflows started after them, never the paused ones
    const others = await Promise.all(['x', 'y', 'z', 'w'].map((s) => b.durable.start(Low, s)));
    for (const o of others) await b.durable.waitForRun(o.runId, { timeout: 20_000 });
    for (const w of waiting) expect(await statusOf(a, w.runId)).toBe('pending');
    // the step that was running when the pause came finishes
    held.release = true;
    expect((await a.durable.waitForRun(running.runId, { timeout: 20_000 })).status).toBe('completed');
    for (const w of waiting) expect(await statusOf(a, w.runId)).toBe('pending');
    await b.durable.resume('qc_slow');
    for (const w of waiting) expect((await a.durable.waitForRun(w.runId, { timeout: 20_000 })).status).toBe('completed');
    expect((await a.durable.listWorkflows()).find((w) => w.name === 'qc_slow')?.paused).toBe(false);
  });

  it('refuses an unknown workflow and a name that is no name, writing nothing', async () => {
    const t = await createApp({ workflows: [Low] });
    await expect(t.durable.pause('qc_nope')).rejects.toBeInstanceOf(UnknownWorkflowError);
    await expect(t.durable.pause(Slow)).rejects.toBeInstanceOf(UnknownWorkflowError); // not a provider of this app
    await expect(t.durable.resume('')).rejects.toThrow(DurableValidationError);
    expect((await t.durable.listWorkflows()).every((w) => !w.paused)).toBe(true);
  });
});

describe('priority', () => {
  /**
   * Six runs of several priorities, started by a node without a worker (all due when a worker node
   * with `concurrency` slots and no claiming ahead comes up); resolves once that node ran them all.
   */
  async function runSix(concurrency: number) {
    const schema = freshSchema();
    const starter = await createApp({ workflows: [Low, High], schema, options: { worker: false } });
    order.length = 0;
    const started = [
      await starter.durable.start(Low, 'low-1'),
      await starter.durable.start(Low, 'low-2'),
      await starter.durable.start(High, 'high-10'),
      await starter.durable.start(Low, 'low-urgent-50', { priority: 50 }),
      await starter.durable.start(High, 'high-demoted--5', { priority: -5 }),
      await starter.durable.start(Low, 'low-3'),
    ];
    const worker = await createApp({ workflows: [Low, High], schema, concurrency, options: { worker: { prefetch: 0 } } });
    for (const s of started) await worker.durable.waitForRun(s.runId, { timeout: 20_000 });
    return { starter, started };
  }
  const byPriority = ['low-urgent-50', 'high-10', 'low-1', 'low-2', 'low-3', 'high-demoted--5'];

  it('higher first among due runs: the workflow default, and start(…, { priority }) overriding it', async () => {
    // one slot: one run per claim
    const { starter, started } = await runSix(1);
    expect((await starter.durable.getRun(started[3].runId))?.priority).toBe(50);
    expect((await starter.durable.getRun(started[2].runId))?.priority).toBe(10);
    expect(order).toEqual(byPriority);
  });

  it('the runs of one claim begin by priority, then by age', async () => {
    // six slots: the worker's first claim takes all six at once, and launches them in its order
    await runSix(6);
    expect(order).toEqual(byPriority);
  });

  it('a workflow with a concurrency limit claims by priority too (its own claim), then by age', async () => {
    const schema = freshSchema();
    const starter = await createApp({ workflows: [Limited], schema, options: { worker: false } });
    order.length = 0;
    const started = [];
    for (const [input, priority] of [
      ['p0-a', 0],
      ['p5-a', 5],
      ['p-3', -3],
      ['p0-b', 0],
      ['p5-b', 5],
      ['p9', 9],
    ] as const) {
      started.push(await starter.durable.start(Limited, input, { priority }));
    }
    // slots to spare: the limit (1 at a time across the cluster) decides, one run per claim
    const worker = await createApp({ workflows: [Limited], schema, concurrency: 4 });
    for (const s of started) await worker.durable.waitForRun(s.runId, { timeout: 20_000 });
    expect(order).toEqual(['p9', 'p5-a', 'p5-b', 'p0-a', 'p0-b', 'p-3']);
  });

  it('startMany items take a priority too; a bad priority is refused before anything is written', async () => {
    const t = await createApp({ workflows: [Low], options: { worker: false } });
    const [r] = await t.durable.startMany(Low, [{ input: 'a', priority: 7 }]);
    expect((await t.durable.getRun((r as { runId: string }).runId))?.priority).toBe(7);
    for (const bad of [1.5, '3', 2 ** 31, Number.NaN]) {
      const err = await t.durable.start(Low, 'x', { priority: bad as number }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(DurableValidationError);
      expect((err as DurableValidationError).message).toMatch(/priority must be an integer/);
    }
    await expect(t.durable.startMany(Low, [{ input: 'ok' }, { input: 'bad', priority: 0.5 }])).rejects.toThrow(/items\[1\]\.priority/);
    expect(await t.durable.countRuns({ workflow: 'qc_low' })).toEqual({ count: 1, capped: false });
  });
});

describe('rate limit', () => {
  it('a backlog held back by its window is claimed again as the window frees, not at the next poll', async () => {
    const schema = freshSchema();
    const starter = await createApp({ workflows: [Rated], schema, options: { worker: false } });
    const started = await starter.durable.startMany(
      Rated,
      Array.from({ length: 9 }, () => ({ input: {} })),
    );
    // a poll every 10 minutes and a heartbeat (which also asks for a claim) every minute: only the
    // window's own wake-up can start the second and third thirds within the test's deadline
    await createApp({ workflows: [Rated], schema, concurrency: 10, options: { worker: { pollInterval: '10m' }, heartbeatInterval: '1m', nodeTimeout: '5m' } });
    for (const s of started) expect((await starter.durable.waitForRun((s as { runId: string }).runId, { timeout: 30_000 })).status).toBe('completed');
    const [w] = await sql<{ most: number; span: number }>(
      `SELECT max((SELECT count(*) FROM ${ident(schema)}.runs b WHERE b.started_at >= a.started_at AND b.started_at < a.started_at + interval '400 milliseconds'))::int AS most,
              extract(epoch FROM max(a.started_at) - min(a.started_at))::float8 AS span
       FROM ${ident(schema)}.runs a`,
    );
    expect(w.most).toBe(3);
    expect(w.span).toBeGreaterThanOrEqual(0.8); // three windows of 400 ms
  });
});

/** One workflow before and after a deploy that adds a concurrency limit per tenant. */
let tenantGate = new Gate();
const tenantsIn: string[] = [];
@Workflow('qc_tenant_job')
class TenantJobBefore {
  @Step()
  async work() {}
}
@Workflow('qc_tenant_job', { concurrency: { limit: 1, by: (input: { tenant: string }) => input.tenant } })
class TenantJobAfter {
  @Step()
  async work(ctx: RunContext<{ tenant: string }>) {
    tenantsIn.push(ctx.input.tenant);
    await tenantGate.wait();
  }
}

/** Fails in its second step; its compensation of the first waits until the test lets it finish. */
let undoGate = new Gate();
@Workflow('qc_compensating', { concurrency: 1, retry: { attempts: 1 } })
class Compensating {
  @Step({ compensate: 'undo' })
  async first() {}
  @Step()
  async second(ctx: RunContext<{ fail: boolean }>) {
    if (ctx.input.fail) throw new Error('second fails');
  }
  async undo() {
    await undoGate.wait();
  }
}

describe('limits added to a workflow that has runs', () => {
  beforeEach(() => {
    tenantGate = new Gate();
    tenantsIn.length = 0;
  });
  afterEach(() => tenantGate.open());

  it('runs started before the limit are grouped once a worker with it joins, then claimed within it', async () => {
    const schema = freshSchema();
    const before = await createApp({ schema, workflows: [TenantJobBefore], options: { worker: false } });
    const ids: string[] = [];
    for (const tenant of ['a', 'a', 'b', 'b']) ids.push((await before.durable.start('qc_tenant_job', { tenant })).runId);
    await before.close();
    const after = await createApp({ schema, workflows: [TenantJobAfter, Low], concurrency: 5 });
    await waitFor(() => tenantsIn.length === 2, { message: 'one run per tenant begins' });
    // a claim pass after those: an unlimited run completes, and no second run of a tenant began
    order.length = 0;
    await after.durable.waitForRun((await after.durable.start(Low, 'probe')).runId, { timeout: 10_000 });
    expect([...tenantsIn].sort()).toEqual(['a', 'b']);
    tenantGate.open();
    for (const id of ids) expect((await after.durable.waitForRun(id, { timeout: 10_000 })).status).toBe('completed');
    expect([...tenantsIn].sort()).toEqual(['a', 'a', 'b', 'b']);
    const groups = await sql<{ group_key: string }>(`SELECT group_key FROM ${ident(schema)}.runs WHERE id = ANY($1) ORDER BY group_key`, [ids]);
    expect(groups.map((g) => g.group_key)).toEqual(['a', 'a', 'b', 'b']);
  });

  it('a run started without a group by an app whose code lacks the limit (a rolling deploy) is grouped once an app boots or a node joins, then claimed', async () => {
    const schema = freshSchema();
    const after = await createApp({ schema, workflows: [TenantJobAfter], concurrency: 5 });
    tenantGate.open();
    // the old app's own boot may already start a sweep of the lease holder (before or after its
    // start below): the run is grouped by that one or by the next
    const old = await createApp({ schema, workflows: [TenantJobBefore], options: { worker: false } });
    const { runId } = await old.durable.start('qc_tenant_job', { tenant: 'c' });
    // the next node of the deploy joins: the lease holder sweeps
    await createApp({ schema, workflows: [TenantJobAfter], concurrency: 5 });
    expect((await after.durable.waitForRun(runId, { timeout: 10_000 })).status).toBe('completed');
    expect(tenantsIn).toEqual(['c']);
    expect((await sql<{ group_key: string | null }>(`SELECT group_key FROM ${ident(schema)}.runs WHERE id = $1`, [runId]))[0].group_key).toBe('c');
  });

  it('a run compensating on a node holds its place under a concurrency limit: no other run of the workflow begins meanwhile', async () => {
    undoGate = new Gate();
    try {
      const t = await createApp({ workflows: [Compensating, Low], concurrency: 5 });
      const failing = await t.durable.start(Compensating, { fail: true });
      await waitFor(() => undoGate.arrived === 1, { message: 'the compensation runs' });
      const next = await t.durable.start(Compensating, { fail: false });
      // a claim pass after that start: an unlimited run completes, and the limited one was not taken
      await t.durable.waitForRun((await t.durable.start(Low, 'probe')).runId, { timeout: 10_000 });
      expect(await statusOf(t, next.runId)).toBe('pending');
      undoGate.open();
      expect((await t.durable.waitForRun(failing.runId, { timeout: 10_000 })).status).toBe('compensated');
      expect((await t.durable.waitForRun(next.runId, { timeout: 10_000 })).status).toBe('completed');
    } finally {
      undoGate.open();
    }
  });
});

describe('concurrency limit and waits', () => {
  it("a limited run that slept is claimed again through its workflow's claim when its timer ends", async () => {
    napped.length = 0;
    const t = await createApp({ workflows: [Napping], concurrency: 4 });
    const runs = [];
    for (const input of ['a', 'b', 'c']) runs.push(await t.durable.start(Napping, input));
    for (const r of runs) expect((await t.durable.waitForRun(r.runId, { timeout: 30_000 })).status).toBe('completed');
    expect([...napped].sort()).toEqual(['a', 'b', 'c']);
  });
});

describe('ctx.progress', () => {
  it('is visible while the step runs (written with the heartbeat), then the last value stays with the finished run; CLI runs get shows it', async () => {
    gate.open = false;
    const t = await createApp({ workflows: [Progress] });
    const { runId } = await t.durable.start(Progress);
    const seen = await waitFor(async () => {
      const r = await t.durable.getRun(runId);
      return r?.status === 'running' && r.progress ? r : undefined;
    });
    expect(seen.progress).toEqual({ done: 2, of: 3 });
    let out = '';
    const code = await runCli(['runs', 'get', runId, '--schema', t.schema, '--url', databaseUrl()], {
      stdout: (s) => (out += s),
      stderr: (s) => (out += s),
      env: {},
    });
    expect(code).toBe(0);
    expect(JSON.parse(/^progress:\s+(.*)$/m.exec(out)?.[1] ?? 'null')).toEqual({ done: 2, of: 3 });
    gate.open = true;
    const done = await t.durable.waitForRun(runId, { timeout: 20_000 });
    expect(done).toMatchObject({ status: 'completed', progress: { done: 3, of: 3 } });
  });

  it('refuses a value JSON cannot hold', async () => {
    @Workflow('qc_bad_progress')
    class BadProgress {
      @Step({ retry: { attempts: 1 } })
      async work(ctx: RunContext) {
        ctx.progress({ n: 10n });
      }
    }
    const t = await createApp({ workflows: [BadProgress] });
    const run = await t.durable.waitForRun((await t.durable.start(BadProgress)).runId, { timeout: 20_000 });
    expect(run.status).toBe('failed');
    expect(JSON.stringify(run.error)).toMatch(/progress.*BigInt/);
  });
});

describe('bad values are refused at startup, naming the option', () => {
  it('@Workflow priority and retry.jitter', async () => {
    expect(() => Workflow('qc_bad', { priority: 1.5 })).toThrow(DurableValidationError);
    expect(() => Workflow('qc_bad', { priority: 'high' as never })).toThrow(/priority must be an integer/);
    expect(() => Workflow('qc_bad', { priorty: 1 } as never)).toThrow(/did you mean "priority"/);
    @Workflow('qc_bad_jitter', { retry: { jitter: 'yes' as never } })
    class BadJitter {
      @Step()
      async work() {}
    }
    await expect(createApp({ workflows: [BadJitter] })).rejects.toThrow(/retry\.jitter must be a boolean/);
  });

  it.each([
    [{ concurrency: 0 }, /concurrency must be an integer from 1/],
    [{ concurrency: 2.5 }, /concurrency must be an integer from 1/],
    [{ concurrency: '3' }, /concurrency must be a number or \{ limit, by \}/],
    [{ concurrency: { limit: 2 } }, /concurrency\.by must be 'key' or a function/],
    [{ concurrency: { limit: -1, by: 'key' } }, /concurrency\.limit must be an integer from 1/],
    [{ concurrency: { limit: 1, by: 'tenant' } }, /concurrency\.by must be 'key' or a function/],
    [{ concurrency: { limit: 1, by: 'key', per: 'x' } }, /unknown option "concurrency\.per"/],
    [{ rateLimit: 10 }, /rateLimit must be \{ limit, period, by\? \}/],
    [{ rateLimit: { limit: 10 } }, /rateLimit\.period must be a duration longer than 0/],
    [{ rateLimit: { limit: 10, period: '0s' } }, /rateLimit\.period must be a duration longer than 0/],
    [{ rateLimit: { limit: 0, period: '1m' } }, /rateLimit\.limit must be an integer from 1/],
    [{ rateLimit: { limit: 1, period: '1m', by: 'key' }, concurrency: { limit: 1, by: (i: { t: string }) => i.t } }, /must be the same/],
  ])('@Workflow(%j) is refused when the class is defined, naming the option', (options, message) => {
    const err = (() => {
      try {
        Workflow('qc_bad_limits', options as never);
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(DurableValidationError);
    expect((err as Error).message).toMatch(message);
  });

  it('a by function that throws or returns no name refuses the start, writing nothing; listWorkflows shows the limits', async () => {
    @Workflow('qc_tenant', { concurrency: { limit: 2, by: (input: { tenant?: string }) => input.tenant as string }, rateLimit: { limit: 5, period: '1m' } })
    class Tenant {
      @Step()
      async work() {}
    }
    const t = await createApp({ workflows: [Tenant], options: { worker: false } });
    await expect(t.durable.start(Tenant, {})).rejects.toThrow(/by\(input\) must be a string of 1 to 255 bytes/);
    await expect(t.durable.start(Tenant, null)).rejects.toThrow(DurableValidationError);
    expect(await t.durable.countRuns({ workflow: 'qc_tenant' })).toEqual({ count: 0, capped: false });
    expect((await t.durable.listWorkflows())[0].options).toMatchObject({ concurrency: { limit: 2, by: 'function' }, rateLimit: { limit: 5, period: 60_000 } });
  });
});
