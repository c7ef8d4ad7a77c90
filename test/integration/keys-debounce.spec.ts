/**
 * debounce: (docs/keys.md, "debounce"): a keyed start waits `period`; each start
 * in that time gives the waiting run the newer input and restarts the wait; `timeout` caps the wait
 * from the first start; starts without a key are not debounced; once picked up, the next start is
 * an ordinary duplicate; a workflow timeout counts from when the debounced run is due.
 */
import { KeyTakenError, RunContext, Step, Workflow } from '../../src';
import { countRuns, createApp, Gate, ident, sql, TestApp, waitFor } from '../support';

type In = { n?: number; gate?: boolean } | null;
let gate = new Gate();
const ranWith: Record<string, unknown[]> = {};

async function body(ctx: RunContext<In>) {
  (ranWith[ctx.runId] ??= []).push(ctx.input);
  if (ctx.input?.gate) await gate.wait(ctx.signal);
  return { input: ctx.input };
}

@Workflow('db_index', { debounce: { period: '700ms', timeout: '1500ms' }, retry: { attempts: 1 } })
class DbIndex {
  @Step()
  async go(ctx: RunContext<In>) {
    return body(ctx);
  }
}

@Workflow('db_open', { debounce: { period: '1s' }, retry: { attempts: 1 } })
class DbOpen {
  @Step()
  async go(ctx: RunContext<In>) {
    return body(ctx);
  }
}

// a period long enough for a burst of sequential starts to fall inside it, also under load
@Workflow('db_short', { debounce: { period: '1500ms' }, retry: { attempts: 1 } })
class DbShort {
  @Step()
  async go(ctx: RunContext<In>) {
    return body(ctx);
  }
}

// The debounce period is longer than the debounce timeout: the cap decides from the first start.
@Workflow('db_long_period', { debounce: { period: '1h', timeout: '1s' }, retry: { attempts: 1 } })
class DbLongPeriod {
  @Step()
  async go(ctx: RunContext<In>) {
    return body(ctx);
  }
}

// The debounce period is longer than the workflow timeout: counted from the first start it would
// time out before it is even due.
@Workflow('db_timeout', { debounce: { period: '1200ms' }, timeout: '800ms', retry: { attempts: 1 } })
class DbTimeout {
  @Step()
  async go(ctx: RunContext<In>) {
    return body(ctx);
  }
}

const ALL = [DbIndex, DbOpen, DbShort, DbTimeout, DbLongPeriod];

async function runAt(schema: string, id: string): Promise<number> {
  const [row] = await sql(`SELECT run_at FROM ${ident(schema)}.runs WHERE id = $1`, [id]);
  return new Date(row.run_at).getTime();
}

/** How long after it was written the run is due (ms, database times). */
async function dueAfterWrite(schema: string, id: string): Promise<number> {
  const [row] = await sql(`SELECT extract(epoch FROM run_at - created_at) * 1000 AS ms FROM ${ident(schema)}.runs WHERE id = $1`, [id]);
  return Number(row.ms);
}

async function dbNow(): Promise<number> {
  const [row] = await sql(`SELECT now() AS now`);
  return new Date(row.now).getTime();
}

/** A producer's cadence between starts (not synchronisation: the assertions poll or read the database). */
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('debounce', () => {
  beforeEach(() => {
    gate = new Gate();
  });

  describe('the wait (no worker: read when each start makes the run due)', () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await createApp({ workflows: ALL, options: { worker: false } });
    });

    it('a keyed start takes no runAt or delay (it is due when its period ends): refused, nothing written; an unkeyed one does', async () => {
      const before = await countRuns(t.schema);
      const err = await t.durable.start('db_index', {}, { key: 'p-at', runAt: new Date(Date.now() + 86_400_000) }).catch((e: unknown) => e);
      expect(err).toMatchObject({ code: 'invalid', message: expect.stringMatching(/debounced workflow is due when its period ends/) });
      await expect(t.durable.start('db_index', {}, { key: 'p-delay', delay: '2d' })).rejects.toMatchObject({ code: 'invalid' });
      await expect(t.durable.startMany('db_index', [{ key: 'p-many', runAt: new Date() }])).rejects.toMatchObject({ code: 'invalid' });
      expect(await countRuns(t.schema)).toBe(before);
      const unkeyed = await t.durable.start('db_index', {}, { delay: '2d' });
      expect(unkeyed.outcome).toBe('created');
      // null is no runAt
      expect((await t.durable.start('db_index', {}, { key: 'p-null', runAt: null as never })).outcome).toBe('created');
    });

    it('a keyed start waits period', async () => {
      const before = await dbNow();
      const r = await t.durable.start('db_index', { n: 1 }, { key: 'p1' });
      expect(r.outcome).toBe('created');
      const due = await runAt(t.schema, r.runId);
      expect(due - before).toBeGreaterThanOrEqual(650);
      expect(due - before).toBeLessThan(700 + 1500);
      expect((await t.durable.getRun(r.runId))!.status).toBe('pending');
    });

    it('each start in that time replaces the input and restarts the wait', async () => {
      const a = await t.durable.start('db_open', { n: 1 }, { key: 'burst' });
      const due1 = await runAt(t.schema, a.runId);
      await pause(150);
      const mid = await dbNow();
      const b = await t.durable.start('db_open', { n: 2 }, { key: 'burst' });
      expect(b).toEqual({ runId: a.runId, outcome: 'debounced' });
      const due2 = await runAt(t.schema, a.runId);
      expect(due2).toBeGreaterThan(due1);
      expect(due2 - mid).toBeGreaterThanOrEqual(950);
      const c = await t.durable.start('db_open', { n: 3 }, { key: 'burst' });
      expect(c).toEqual({ runId: a.runId, outcome: 'debounced' });
      expect((await t.durable.getRun(a.runId))!.input).toEqual({ n: 3 });
      expect(await countRuns(t.schema, 'key = $1', ['burst'])).toBe(1);
    });

    it('timeout caps the wait from the first start; without timeout the wait keeps moving', async () => {
      const a = await t.durable.start('db_index', { n: 0 }, { key: 'cap' });
      // the limit counts from the first start's statement, on the database's clock (its created_at)
      const first = (await t.durable.getRun(a.runId))!.createdAt.getTime();
      const open = await t.durable.start('db_open', { n: 0 }, { key: 'open' });
      const openFirst = await runAt(t.schema, open.runId);
      for (let i = 1; i <= 6; i++) {
        await pause(300);
        expect((await t.durable.start('db_index', { n: i }, { key: 'cap' })).outcome).toBe('debounced');
        expect((await t.durable.start('db_open', { n: i }, { key: 'open' })).outcome).toBe('debounced');
        const due = await runAt(t.schema, a.runId);
        expect(due - first).toBeLessThanOrEqual(1500); // never past first start + timeout
      }
      // after 1.8 s of saves (more than timeout − period), the capped run is due at first + timeout
      expect((await runAt(t.schema, a.runId)) - first).toBe(1500);
      // the uncapped one is due a period after the last save: later than its first due time by the saves' span
      expect((await runAt(t.schema, open.runId)) - openFirst).toBeGreaterThanOrEqual(1500);
      expect((await t.durable.getRun(a.runId))!.input).toEqual({ n: 6 });
    });

    it('with period longer than timeout, the first start is already due timeout after it, and later starts keep that', async () => {
      const a = await t.durable.start('db_long_period', { n: 1 }, { key: 'long' });
      const first = (await t.durable.getRun(a.runId))!.createdAt.getTime();
      expect((await runAt(t.schema, a.runId)) - first).toBe(1000);
      expect(await t.durable.start('db_long_period', { n: 2 }, { key: 'long' })).toEqual({ runId: a.runId, outcome: 'debounced' });
      expect((await runAt(t.schema, a.runId)) - first).toBe(1000);
    });

    it('starts without a key are not debounced', async () => {
      const a = await t.durable.start('db_open', { n: 1 });
      const b = await t.durable.start('db_open', { n: 2 }, { key: null });
      expect(a.outcome).toBe('created');
      expect(b.outcome).toBe('created');
      expect(a.runId).not.toBe(b.runId);
      // due when written (a debounced start is due a whole period, 1 s, later): database times only
      for (const id of [a.runId, b.runId]) expect(await dueAfterWrite(t.schema, id)).toBeLessThan(1000);
    });

    it('before pickup a start is debounced whatever onDuplicate says', async () => {
      const a = await t.durable.start('db_open', { n: 1 }, { key: 'od' });
      expect(await t.durable.start('db_open', { n: 2 }, { key: 'od', onDuplicate: 'error' })).toEqual({
        runId: a.runId,
        outcome: 'debounced',
      });
      expect((await t.durable.getRun(a.runId))!.input).toEqual({ n: 2 });
    });
  });

  describe('with a worker', () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await createApp({ workflows: ALL });
    });

    it('a burst becomes one run with the last input, run a period after the last start', async () => {
      const a = await t.durable.start('db_short', { n: 1 }, { key: 'b1' });
      let beforeLast = 0;
      for (let i = 2; i <= 4; i++) {
        // the database's clock just before the last start: its window of 1,500 ms begins after this
        if (i === 4) beforeLast = await dbNow();
        expect(await t.durable.start('db_short', { n: i }, { key: 'b1' })).toEqual({ runId: a.runId, outcome: 'debounced' });
      }
      const done = await t.durable.waitForRun(a.runId, { timeout: 10_000 });
      expect(done.status).toBe('completed');
      expect(ranWith[a.runId]).toEqual([{ n: 4 }]);
      expect(done.startedAt!.getTime() - beforeLast).toBeGreaterThanOrEqual(1_500);
      expect(await countRuns(t.schema, 'key = $1', ['b1'])).toBe(1);
    });

    it('a capped run starts at most timeout after the first start even if saves keep coming', async () => {
      const a = await t.durable.start('db_index', { n: 0 }, { key: 'stream' });
      const created = (await t.durable.getRun(a.runId))!.createdAt.getTime();
      let n = 0;
      let picked = false;
      const deadline = Date.now() + 8_000;
      while (!picked && Date.now() < deadline) {
        await pause(200);
        const r = await t.durable.start('db_index', { n: ++n }, { key: 'stream' });
        picked = r.outcome !== 'debounced';
      }
      const run = await waitFor(async () => {
        const r = await t.durable.getRun(a.runId);
        return r?.startedAt ? r : null;
      });
      expect(run.startedAt!.getTime() - created).toBeGreaterThanOrEqual(1450);
      expect(run.startedAt!.getTime() - created).toBeLessThan(1500 + 2_000);
      await t.durable.waitForRun(a.runId, { timeout: 10_000 });
    });

    it('once a worker picked the run up, the next start is an ordinary duplicate', async () => {
      const a = await t.durable.start('db_short', { gate: true }, { key: 'picked' });
      await waitFor(async () => (await t.durable.getRun(a.runId))?.status === 'running');
      expect(await t.durable.start('db_short', { n: 2 }, { key: 'picked' })).toEqual({ runId: a.runId, outcome: 'useExisting' });
      const err = await t.durable.start('db_short', { n: 3 }, { key: 'picked', onDuplicate: 'error' }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(KeyTakenError);
      expect((err as KeyTakenError).holderId).toBe(a.runId);
      expect((await t.durable.getRun(a.runId))!.input).toEqual({ gate: true });
      gate.open();
      expect((await t.durable.waitForRun(a.runId, { timeout: 10_000 })).status).toBe('completed');
      expect(ranWith[a.runId]).toEqual([{ gate: true }]);
      // finished: the key is free again under afterClose, and the new start is debounced again
      const b = await t.durable.start('db_short', { n: 4 }, { key: 'picked' });
      expect(b.outcome).toBe('created');
      // due a whole period after its start (not at once, as a start that is not debounced would be)
      const [row] = await sql<{ ms: number }>(
        `SELECT extract(epoch FROM run_at - created_at)::float8 * 1000 AS ms FROM ${ident(t.schema)}.runs WHERE id = $1`,
        [b.runId],
      );
      expect(row.ms).toBeGreaterThanOrEqual(1_499);
    });

    it('the workflow timeout counts from when the debounced run is due, not from the first start', async () => {
      const a = await t.durable.start('db_timeout', { n: 1 }, { key: 'to' });
      await pause(400);
      expect((await t.durable.start('db_timeout', { n: 2 }, { key: 'to' })).outcome).toBe('debounced');
      const done = await t.durable.waitForRun(a.runId, { timeout: 10_000 });
      expect(done.error).toBeNull();
      expect(done.status).toBe('completed');
      expect(ranWith[a.runId]).toEqual([{ n: 2 }]);
    });

    it('starts without a key run at once', async () => {
      const a = await t.durable.start('db_open', { n: 1 });
      const done = await t.durable.waitForRun(a.runId, { timeout: 10_000 });
      expect(done.status).toBe('completed');
      // due when written, not a period (1 s) later; how soon a worker picked it up depends on the machine
      expect(await dueAfterWrite(t.schema, a.runId)).toBeLessThan(1000);
    });
  });
});
