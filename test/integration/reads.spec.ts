import { randomUUID } from 'crypto';
import { DurableValidationError, RunContext, RunNotFoundError, Step, Workflow } from '../../src';
import { createApp, ident, sql, waitFor } from '../support';
import { forceStatus } from '../support/keys';

@Workflow('reads_echo', { reuse: 'afterFailure', debounce: { period: 60_000 } })
class Echo {
  @Step()
  async one(ctx: RunContext) {
    return ctx.input;
  }

  @Step()
  async two() {
    return 'two';
  }
}

@Workflow('reads_other', { timeout: 60_000, retry: { attempts: 2, backoff: 'fixed', initialDelay: '250ms' } })
class Other {
  @Step()
  async only() {
    return 1;
  }
}

let failuresLeft = 0;

@Workflow('reads_flaky')
class Flaky {
  @Step({ retry: { attempts: 3, initialDelay: 1, backoff: 'fixed' } })
  async shaky() {
    if (failuresLeft-- > 0) throw new Error('not yet');
    return 'ok';
  }

  @Step()
  async approve(ctx: RunContext) {
    return ctx.waitForInput<string>('approval');
  }
}

describe('reading more: listRuns both ways, countRuns, listKeys across workflows, listActivity pages, listWorkflows, listNodes, getRunHistory', () => {
  it('listRuns pages back with before and forth with after, newest first both ways', async () => {
    const { durable } = await createApp({ workflows: [Echo, Other], options: { worker: false } });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await durable.start('reads_other', { i })).runId);
    const newest = [...ids].sort().reverse(); // newest first is by id (UUIDv7: time first; starts in one millisecond in any order)
    const first = await durable.listRuns({ limit: 2 });
    expect(first.map((r) => r.id)).toEqual(newest.slice(0, 2));
    const second = await durable.listRuns({ limit: 2, before: first[1].id });
    expect(second.map((r) => r.id)).toEqual(newest.slice(2, 4));
    const back = await durable.listRuns({ limit: 2, after: second[0].id });
    expect(back.map((r) => r.id)).toEqual(newest.slice(0, 2));
    const last = await durable.listRuns({ limit: 2, cursor: second[1].id });
    expect(last.map((r) => r.id)).toEqual(newest.slice(4));
    await expect(durable.listRuns({ after: 'nope' })).rejects.toBeInstanceOf(DurableValidationError);
  });

  it('countRuns counts up to its cap and says when it stopped there', async () => {
    const { durable } = await createApp({ workflows: [Echo, Other], options: { worker: false } });
    for (let i = 0; i < 5; i++) await durable.start('reads_other', { i }, { key: `k${i}` });
    await durable.start('reads_echo', 1, { key: 'k0' });
    expect(await durable.countRuns({ workflow: 'reads_other' }, { cap: 3 })).toEqual({ count: 3, capped: true });
    expect(await durable.countRuns({ workflow: 'reads_other' })).toEqual({ count: 5, capped: false });
    expect(await durable.countRuns({ status: 'pending' })).toEqual({ count: 6, capped: false });
    expect(await durable.countRuns({ status: 'failed' })).toEqual({ count: 0, capped: false });
    expect(await durable.countRuns({ key: 'k0' })).toEqual({ count: 2, capped: false });
    expect(await durable.countRuns({ workflow: Echo, key: 'k0' })).toEqual({ count: 1, capped: false });
  });

  it('counts by status read every status, whichever index holds it: pending, running, waiting and finished runs', async () => {
    const { durable, schema } = await createApp({ workflows: [Echo, Other], options: { worker: false } });
    const statuses = ['pending', 'pending', 'running', 'waiting', 'completed', 'completed', 'failed', 'cancelled'] as const;
    for (const status of statuses) await forceStatus(schema, (await durable.start('reads_other', status)).runId, status);
    await durable.start('reads_echo', 1);
    const other = (await durable.listWorkflows()).find((w) => w.name === 'reads_other')!;
    expect(other.counts).toEqual({
      pending: 2,
      running: 1,
      waiting: 1,
      compensating: 0,
      completed: 2,
      failed: 1,
      cancelled: 1,
      compensated: 0,
      compensation_failed: 0,
    });
    // a workflow's runs of every status together, up to the cap across the groups
    expect(await durable.countRuns({ workflow: 'reads_other' })).toEqual({ count: 8, capped: false });
    expect(await durable.countRuns({ workflow: 'reads_other' }, { cap: 8 })).toEqual({ count: 8, capped: false });
    expect(await durable.countRuns({ workflow: 'reads_other' }, { cap: 7 })).toEqual({ count: 7, capped: true });
    expect(await durable.countRuns({ workflow: 'reads_other', status: ['running', 'completed'] })).toEqual({ count: 3, capped: false });
    expect(await durable.countRuns({ workflow: 'reads_other', status: 'waiting' })).toEqual({ count: 1, capped: false });
    expect(await durable.countRuns({ status: 'pending' })).toEqual({ count: 3, capped: false });
    const newestFirst = async (status: 'completed' | 'pending') => (await durable.listRuns({ workflow: 'reads_other', status })).map((r) => r.id);
    for (const status of ['completed', 'pending'] as const) {
      const ids = await newestFirst(status);
      expect(ids).toHaveLength(2);
      expect(ids).toEqual([...ids].sort().reverse());
    }
  });

  it('listKeys without a workflow lists the keys of every workflow, newest first, and pages without repeating a key', async () => {
    const { durable } = await createApp({ workflows: [Echo, Other], options: { worker: false } });
    await durable.start('reads_other', 1, { key: 'a' });
    await durable.start('reads_echo', 1, { key: 'a' });
    await durable.start('reads_other', 1, { key: 'b' });
    const older = await durable.start('reads_other', 1, { key: 'c' });
    await durable.start('reads_other', 2, { key: 'a' }); // a duplicate: 'a' of reads_other keeps its place
    const all = await durable.listKeys({});
    // newest first by each key's newest run (runs newest first, each key where it first appears)
    const byNewestRun = [...new Set((await durable.listRuns({})).map((r) => `${r.workflow}/${r.key}`))];
    expect(all.map((k) => `${k.workflow}/${k.key}`)).toEqual(byNewestRun);
    expect(byNewestRun.sort()).toEqual(['reads_echo/a', 'reads_other/a', 'reads_other/b', 'reads_other/c']);
    expect(all.find((k) => k.key === 'c')).toMatchObject({ holderId: older.runId, holderStatus: 'pending', runs: 1 });
    expect(all.find((k) => k.workflow === 'reads_other' && k.key === 'a')?.readdsLastDay).toBe(1);
    const page1 = await durable.listKeys({ limit: 2 });
    const page2 = await durable.listKeys({ limit: 2, cursor: page1[1].cursor });
    expect([...page1, ...page2].map((k) => `${k.workflow}/${k.key}`)).toEqual(all.map((k) => `${k.workflow}/${k.key}`));
    expect((await durable.listKeys({ search: 'b' })).map((k) => k.key)).toEqual(['b']);
    // with a workflow: by key, the cursor is the key
    const echo = await durable.listKeys({ workflow: Other, limit: 2 });
    expect(echo.map((k) => k.key)).toEqual(['a', 'b']);
    expect((await durable.listKeys({ workflow: Other, cursor: echo[1].cursor })).map((k) => k.key)).toEqual(['c']);
    await expect(durable.listKeys({ cursor: 'not-a-run' })).rejects.toBeInstanceOf(DurableValidationError);
  });

  it('listKeys without a workflow pages past a key whose runs fill the window it reads, to the keys older than them', async () => {
    const { durable, schema } = await createApp({ workflows: [Other], options: { worker: false } });
    await durable.start('reads_other', 0, { key: 'old' });
    // a page of 2 reads a window of the newest 40 keyed runs: one key's 45 runs fill it
    for (let i = 0; i < 45; i++) {
      const { runId } = await durable.start('reads_other', i, { key: 'hot' });
      await forceStatus(schema, runId, 'completed');
    }
    const keysOf = (page: { key: string }[]) => page.map((k) => k.key);
    expect(keysOf(await durable.listKeys({ limit: 2 }))).toEqual(['hot', 'old']);
    const first = await durable.listKeys({ limit: 1 });
    expect(keysOf(first)).toEqual(['hot']);
    expect(keysOf(await durable.listKeys({ limit: 1, cursor: first[0].cursor }))).toEqual(['old']);
    expect(keysOf(await durable.listKeys({ limit: 2, search: 'ol' }))).toEqual(['old']);
  });

  it('listKeys without a workflow stops a page after ten windows, short, its last cursor going on from where it stopped', async () => {
    const { durable, schema } = await createApp({ workflows: [Other], options: { worker: false } });
    await durable.start('reads_other', 0, { key: 'old' });
    // a page of 2 reads 40 runs, then windows of 20 for the one key it lacks: 220 runs in ten windows;
    // the next, ten windows of 40 from there (from the top they would end 50 runs short of 'old')
    for (let i = 0; i < 450; i++) {
      const { runId } = await durable.start('reads_other', i, { key: 'hot' });
      await forceStatus(schema, runId, 'completed');
    }
    const first = await durable.listKeys({ limit: 2 });
    expect(first.map((k) => k.key)).toEqual(['hot']);
    expect((await durable.listKeys({ limit: 2, cursor: first[0].cursor })).map((k) => k.key)).toEqual(['old']);
  });

  it('listKeysPage: a page across workflows that holds no key still has next, which goes on to the older keys', async () => {
    const { durable, schema } = await createApp({ workflows: [Other], options: { worker: false } });
    await durable.start('reads_other', 0, { key: 'old' });
    const [{ id }] = await sql<{ id: string }>(`SELECT id::text FROM ${ident(schema)}.runs WHERE key = 'old'`);
    // 800 finished runs of one key, newer than 'old' (ids of the next millisecond, in order): a page of 2
    // reads at most 220 runs, the next at most 400 (no key), the third reaches 'old'
    const ms = (BigInt(`0x${id.replace(/-/g, '').slice(0, 12)}`) + 1n).toString(16).padStart(12, '0');
    await sql(
      `INSERT INTO ${ident(schema)}.runs (id, workflow, key, status, finished_at)
       SELECT ($1 || '70008000' || lpad(to_hex(i), 12, '0'))::uuid, 'reads_other', 'hot', 'completed', now() FROM generate_series(1, 800) i`,
      [ms],
    );
    const keysOf = (page: { key: string }[]) => page.map((k) => k.key);
    // listKeys: the empty second page has no key, so no cursor to go on with
    const first = await durable.listKeys({ limit: 2 });
    expect(keysOf(first)).toEqual(['hot']);
    expect(await durable.listKeys({ limit: 2, cursor: first[0].cursor })).toEqual([]);

    const one = await durable.listKeysPage({ limit: 2 });
    expect({ keys: keysOf(one.keys), next: one.next }).toEqual({ keys: ['hot'], next: first[0].cursor });
    const two = await durable.listKeysPage({ limit: 2, cursor: one.next! });
    expect(two.keys).toEqual([]);
    expect(two.next).toEqual(expect.any(String));
    const three = await durable.listKeysPage({ limit: 2, cursor: two.next! });
    expect({ keys: keysOf(three.keys), next: three.next }).toEqual({ keys: ['old'], next: null });
    // with a workflow, a full page's next is its last key
    expect(await durable.listKeysPage({ workflow: Other, limit: 1 })).toEqual({ keys: [expect.objectContaining({ key: 'hot' })], next: 'hot' });
    await expect(durable.listKeysPage({ limit: 2, serach: 'x' } as never)).rejects.toThrow(/^listKeysPage: unknown option "serach"/);
  });

  it('listActivity pages back through older events with cursor', async () => {
    const { durable } = await createApp({ workflows: [Other], options: { worker: false } });
    await durable.start('reads_other', 0, { key: 'dup' });
    for (let i = 1; i <= 5; i++) await durable.start('reads_other', i, { key: 'dup' });
    const all = await durable.listActivity({});
    expect(all).toHaveLength(5);
    const page1 = await durable.listActivity({ limit: 3 });
    const page2 = await durable.listActivity({ limit: 3, cursor: page1[2].id });
    expect([...page1, ...page2].map((e) => e.id)).toEqual(all.map((e) => e.id));
    const byKey = await durable.listActivity({ key: 'dup', limit: 2, cursor: page1[0].id });
    expect(byKey.map((e) => e.id)).toEqual(all.slice(1, 3).map((e) => e.id));
    await expect(durable.listActivity({ cursor: 'x; drop' })).rejects.toBeInstanceOf(DurableValidationError);
  });

  it('bad filters and options of listRuns, countRuns, listActivity, listKeys and keyStats reject with DurableValidationError, never a database error; null options are no options', async () => {
    const { durable } = await createApp({ workflows: [Other], options: { worker: false } });
    const run = (await durable.start('reads_other', 1, { key: 'k' })).runId;
    await durable.start('reads_other', 2, { key: 'k' }); // a duplicate: no run, a key_duplicate event
    const NUL = 'a\0b';
    const refused: [string, () => Promise<unknown>][] = [
      ['listRuns({ limit: NaN })', () => durable.listRuns({ limit: NaN })],
      ["listRuns({ limit: 'abc' })", () => durable.listRuns({ limit: 'abc' as never })],
      ['listRuns({ key: NUL })', () => durable.listRuns({ key: NUL })],
      ['listRuns({ workflow: NUL })', () => durable.listRuns({ workflow: NUL })],
      ['listRuns({ flowId: NUL })', () => durable.listRuns({ flowId: NUL })],
      ["listRuns({ status: 'bogus' })", () => durable.listRuns({ status: 'bogus' as never })],
      ["listRuns({ status: ['failed', 'bogus'] })", () => durable.listRuns({ status: ['failed', 'bogus' as never] })],
      ["listRuns({ waitingFor: 'bogus' })", () => durable.listRuns({ waitingFor: 'bogus' as never })],
      ['listRuns({ key: 42 })', () => durable.listRuns({ key: 42 as never })],
      ["listRuns('name')", () => durable.listRuns('name' as never)],
      ['countRuns({ key: NUL })', () => durable.countRuns({ key: NUL })],
      ["countRuns({ status: 'bogus' })", () => durable.countRuns({ status: 'bogus' as never })],
      ['countRuns({}, { cap: NaN })', () => durable.countRuns({}, { cap: NaN })],
      ["countRuns('name')", () => durable.countRuns('name' as never)],
      ['countRuns({}, 5)', () => durable.countRuns({}, 5 as never)],
      ["listActivity({ kinds: 'key_duplicate' })", () => durable.listActivity({ kinds: 'key_duplicate' as never })],
      ['listActivity({ kinds: [NUL] })', () => durable.listActivity({ kinds: [NUL] })],
      ["listActivity({ since: new Date('x') })", () => durable.listActivity({ since: new Date('x') })],
      ['listActivity({ since: 5 })', () => durable.listActivity({ since: 5 as never })],
      ['listActivity({ key: NUL })', () => durable.listActivity({ key: NUL })],
      ['listActivity({ workflow: NUL })', () => durable.listActivity({ workflow: NUL })],
      ['listActivity({ limit: NaN })', () => durable.listActivity({ limit: NaN })],
      ["listActivity('x')", () => durable.listActivity('x' as never)],
      ["listActivity({ cursor: Symbol('c') })", () => durable.listActivity({ cursor: Symbol('c') as never })],
      ['listActivity({ cursor: {} })', () => durable.listActivity({ cursor: {} as never })],
      ['listKeys({ search: NUL })', () => durable.listKeys({ search: NUL })],
      ['listKeys({ workflow, cursor: NUL })', () => durable.listKeys({ workflow: 'reads_other', cursor: NUL })],
      ['listKeys({ limit: NaN })', () => durable.listKeys({ limit: NaN })],
      ["listKeys('x')", () => durable.listKeys('x' as never)],
      ["keyStats('reads_other')", () => durable.keyStats('reads_other' as never)],
      ['keyStats({})', () => durable.keyStats({} as never)],
      ['keyStats(null)', () => durable.keyStats(null as never)],
    ];
    for (const [call, fn] of refused) {
      const err = await fn().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect([call, err instanceof DurableValidationError ? 'DurableValidationError' : err]).toEqual([call, 'DurableValidationError']);
    }
    // null options are no options
    expect((await durable.listRuns(null as never)).map((r) => r.id)).toContain(run);
    expect(await durable.countRuns(null as never, null as never)).toEqual({ count: 1, capped: false });
    expect(await durable.listActivity(null as never)).toHaveLength(1);
    expect((await durable.listKeys(null as never)).map((k) => k.key)).toEqual(['k']);
    // null for a filter, the run-id ones included, is no filter
    const none = null as never;
    expect((await durable.listRuns({ cursor: none, before: none, after: none, parentId: none, key: none })).map((r) => r.id)).toEqual([run]);
    expect(await durable.listActivity({ runId: none, cursor: none })).toHaveLength(1);
    // still accepted: a limit out of range is clamped, a Date since filters
    expect(await durable.listRuns({ limit: 0 })).toHaveLength(1);
    expect(await durable.listActivity({ since: new Date(Date.now() + 3_600_000) })).toEqual([]);
  });

  it('listWorkflows describes each workflow with its steps, options and runs per status; listNodes the live nodes', async () => {
    const { durable } = await createApp({ workflows: [Echo, Other], concurrency: 3 });
    const { runId } = await durable.start('reads_other', 1);
    await durable.waitForRun(runId, { timeout: 20_000 });
    await durable.start('reads_echo', 1, { runAt: new Date(Date.now() + 3_600_000) });
    const workflows = await durable.listWorkflows();
    expect(workflows.map((w) => w.name)).toEqual(['reads_echo', 'reads_other']);
    expect(workflows[0]).toMatchObject({
      steps: ['one', 'two'],
      options: { reuse: 'afterFailure', onDuplicate: 'useExisting', debounce: { period: 60_000 } },
      counts: { pending: 1, completed: 0 },
    });
    expect(workflows[1]).toMatchObject({ steps: ['only'], options: { timeout: 60_000 }, counts: { completed: 1, pending: 0, failed: 0 } });
    // the retry policy, the workflow's own over the defaults (delays in ms)
    expect(workflows[0].options.retry).toEqual({ attempts: 3, backoff: 'exponential', initialDelay: 1_000, maxDelay: 300_000, jitter: true });
    expect(workflows[1].options.retry).toEqual({ attempts: 2, backoff: 'fixed', initialDelay: 250, maxDelay: 300_000, jitter: true });
    const nodes = await waitFor(async () => {
      const list = await durable.listNodes();
      return list.length === 1 && list[0].alive ? list : undefined;
    });
    expect(nodes[0]).toMatchObject({ alive: true, running: 0, concurrency: 3, workflows: expect.arrayContaining(['reads_echo', 'reads_other']) });
    expect(nodes[0].lastSeenAt.getTime()).toBeGreaterThanOrEqual(nodes[0].startedAt.getTime());
  });

  it('getRunHistory lists every attempt of every step: failures, the wait that suspended it, completions', async () => {
    failuresLeft = 2;
    const { durable } = await createApp({ workflows: [Flaky] });
    const t0 = Date.now();
    const { runId } = await durable.start('reads_flaky');
    await waitFor(async () => (await durable.getRun(runId))?.status === 'waiting', { timeout: 20_000 });
    await durable.provideInput(runId, 'approval', 'yes');
    await durable.waitForRun(runId, { timeout: 20_000 });
    const history = await durable.getRunHistory(runId);
    expect(history.map((h) => [h.name, h.step, h.attempt, h.status])).toEqual([
      ['shaky', 0, 1, 'failed'],
      ['shaky', 0, 2, 'failed'],
      ['shaky', 0, 3, 'completed'],
      ['approve', 1, 1, 'suspended'],
      ['approve', 1, 1, 'completed'],
    ]);
    expect(history[0].error).toMatchObject({ message: 'not yet' });
    expect(history[2].error).toBeUndefined();
    for (const h of history) {
      expect(h.nodeId).toEqual(expect.any(String));
      expect(h.finishedAt.getTime()).toBeGreaterThanOrEqual(h.startedAt.getTime());
      // the attempt's own times (the node's clock, to the millisecond), within the test's
      expect(h.startedAt.getTime()).toBeGreaterThanOrEqual(t0);
      expect(h.finishedAt.getTime()).toBeLessThanOrEqual(Date.now());
    }
    await expect(durable.getRunHistory(randomUUID())).rejects.toBeInstanceOf(RunNotFoundError);
  });
});
