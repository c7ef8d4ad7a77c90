/**
 * Keys across the lifecycle (docs/keys.md, "Inside your own transaction" and "Retry,
 * Rerun and Releasing a Key"): starts in the caller's transaction (duplicates don't poison it, a
 * rollback undoes the run, its key, a hand-off or a cancelExisting), retry taking the key back,
 * rerun, releaseKey, and pruning a holder.
 */
import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { DurableValidationError, KeyTakenError, NoKeyError, NotFinishedError, RunContext, RunStatus, Step, Workflow } from '../../src';
import { countRuns, createApp, databaseUrl, Gate, ident, sql, TestApp, waitFor, waitForLockWait } from '../support';
import { forceStatus, holdersOf, rejection, expectKeyTaken } from '../support/keys';

/** Keys whose runs fail (until removed). */
const failing = new Set<string>();
let gate = new Gate();
const ranWith: Record<string, unknown[]> = {};

async function body(ctx: RunContext<{ n?: number; gate?: boolean; event?: string } | null>) {
  (ranWith[ctx.runId] ??= []).push(ctx.input);
  if (ctx.key && failing.has(ctx.key)) throw new Error(`failing ${ctx.key}`);
  if (ctx.input?.gate) await gate.wait(ctx.signal);
  if (ctx.input?.event) return { event: await ctx.waitForEvent(ctx.input.event) };
  return { input: ctx.input };
}

@Workflow('l_close', { retry: { attempts: 1 } })
class LClose {
  @Step()
  async go(ctx: RunContext<{ n?: number } | null>) {
    return body(ctx);
  }
}

@Workflow('l_failure', { reuse: 'afterFailure', retry: { attempts: 1 } })
class LFailure {
  @Step()
  async go(ctx: RunContext<{ n?: number } | null>) {
    return body(ctx);
  }
}

@Workflow('l_never', { reuse: 'never', retry: { attempts: 1 } })
class LNever {
  @Step()
  async go(ctx: RunContext<{ n?: number } | null>) {
    return body(ctx);
  }
}

@Workflow('l_debounce', { debounce: { period: '1h' }, retry: { attempts: 1 } })
class LDebounce {
  @Step()
  async go(ctx: RunContext<{ n?: number } | null>) {
    return body(ctx);
  }
}

const ALL = [LClose, LFailure, LNever, LDebounce];
const FINAL: RunStatus[] = ['completed', 'failed', 'cancelled', 'compensated', 'compensation_failed'];

async function activityKinds(schema: string, key: string): Promise<string[]> {
  const rows = await sql(`SELECT kind FROM ${ident(schema)}.activity WHERE key = $1 ORDER BY id`, [key]);
  return rows.map((r) => r.kind);
}

describe('keys across the lifecycle', () => {
  beforeEach(() => {
    failing.clear();
    gate = new Gate();
  });

  describe("inside the caller's transaction (manager)", () => {
    let ds: DataSource;
    let t: TestApp;

    beforeAll(async () => {
      ds = new DataSource({ type: 'postgres', url: databaseUrl() });
      await ds.initialize();
      t = await createApp({ workflows: ALL, options: { worker: false } });
      await sql(`CREATE TABLE ${ident(t.schema)}.articles (id serial PRIMARY KEY, title text NOT NULL)`);
    });

    afterAll(async () => {
      await ds.destroy();
    });

    const articles = async (title: string) => (await sql(`SELECT count(*)::int AS n FROM ${ident(t.schema)}.articles WHERE title = $1`, [title]))[0].n;

    it('a duplicate neither throws nor poisons the transaction (useExisting and error)', async () => {
      const a = await t.durable.start('l_close', {}, { key: 'tx-dup' });
      let got: unknown;
      let err: unknown;
      await ds.transaction(async (manager) => {
        await manager.query(`INSERT INTO ${ident(t.schema)}.articles (title) VALUES ('dup-before')`);
        got = await t.durable.start('l_close', { n: 2 }, { key: 'tx-dup', manager });
        err = await rejection(t.durable.start('l_close', { n: 3 }, { key: 'tx-dup', manager, onDuplicate: 'error' }));
        await manager.query(`INSERT INTO ${ident(t.schema)}.articles (title) VALUES ('dup-after')`);
      });
      expect(got).toEqual({ runId: a.runId, outcome: 'useExisting' });
      expect(err).toBeInstanceOf(KeyTakenError);
      expect(await articles('dup-before')).toBe(1);
      expect(await articles('dup-after')).toBe(1);
      expect(await countRuns(t.schema, 'key = $1', ['tx-dup'])).toBe(1);
    });

    it.each(['REPEATABLE READ', 'SERIALIZABLE'] as const)('a duplicate does not poison a %s transaction either', async (level) => {
      const key = `tx-iso-${level}`;
      const a = await t.durable.start('l_close', {}, { key });
      await ds.transaction(level, async (manager) => {
        expect(await t.durable.start('l_close', {}, { key, manager })).toEqual({ runId: a.runId, outcome: 'useExisting' });
        await expect(t.durable.start('l_close', {}, { key, manager, onDuplicate: 'error' })).rejects.toBeInstanceOf(KeyTakenError);
        await manager.query(`INSERT INTO ${ident(t.schema)}.articles (title) VALUES ($1)`, [key]);
      });
      expect(await articles(key)).toBe(1);
    });

    it('starts made at once on one transaction (Promise.all), each decided under its holder’s lock, all land and the transaction goes on', async () => {
      const keys = ['tx-all-1', 'tx-all-2', 'tx-all-3'];
      const old = await Promise.all(keys.map((key) => t.durable.start('l_close', {}, { key })));
      for (const o of old) await forceStatus(t.schema, o.runId, 'completed');
      const waiting = await Promise.all(keys.map((key) => t.durable.start('l_debounce', {}, { key })));
      let handed: { runId: string; outcome: string }[] = [];
      let debounced: { runId: string; outcome: string }[] = [];
      await ds.transaction(async (manager) => {
        // each in a savepoint of this transaction: a finished holder handed over, a debounce re-add
        [handed, debounced] = await Promise.all([
          Promise.all(keys.map((key, n) => t.durable.start('l_close', { n }, { key, manager }))),
          Promise.all(keys.map((key, n) => t.durable.start('l_debounce', { n }, { key, manager }))),
        ]);
        await manager.query(`INSERT INTO ${ident(t.schema)}.articles (title) VALUES ('all-after')`);
      });
      expect(handed.map((r) => r.outcome)).toEqual(keys.map(() => 'created'));
      expect(debounced).toEqual(waiting.map((w) => ({ runId: w.runId, outcome: 'debounced' })));
      expect(await articles('all-after')).toBe(1);
      for (const [n, key] of keys.entries()) {
        expect(await holdersOf(t.schema, 'l_close', key)).toEqual([handed[n].runId]);
        expect((await t.durable.getRun(handed[n].runId))?.input).toEqual({ n });
        expect((await t.durable.getRun(waiting[n].runId))?.input).toEqual({ n });
      }
    });

    it('a rollback removes the new run and its key', async () => {
      let runId = '';
      await rejection(
        ds.transaction(async (manager) => {
          runId = (await t.durable.start('l_close', {}, { key: 'tx-rb', manager })).runId;
          throw new Error('rollback');
        }),
      );
      expect(runId).not.toBe('');
      expect(await t.durable.getRun(runId)).toBeNull();
      expect(await holdersOf(t.schema, 'l_close', 'tx-rb')).toEqual([]);
      expect((await t.durable.start('l_close', {}, { key: 'tx-rb' })).outcome).toBe('created');
    });

    it('a rollback undoes a hand-off from a finished holder', async () => {
      const a = await t.durable.start('l_close', {}, { key: 'tx-ho' });
      await forceStatus(t.schema, a.runId, 'completed');
      let b = '';
      await rejection(
        ds.transaction(async (manager) => {
          const r = await t.durable.start('l_close', {}, { key: 'tx-ho', manager });
          expect(r.outcome).toBe('created');
          b = r.runId;
          throw new Error('rollback');
        }),
      );
      expect(await t.durable.getRun(b)).toBeNull();
      expect(await holdersOf(t.schema, 'l_close', 'tx-ho')).toEqual([a.runId]);
      expect(await activityKinds(t.schema, 'tx-ho')).toEqual([]);
    });

    it('a rollback undoes a cancelExisting: the holder is going again and holds its key', async () => {
      const a = await t.durable.start('l_never', { n: 1 }, { key: 'tx-ce' });
      await rejection(
        ds.transaction(async (manager) => {
          const r = await t.durable.start('l_never', { n: 2 }, { key: 'tx-ce', manager, onDuplicate: 'cancelExisting' });
          expect(r.outcome).toBe('cancelExisting');
          throw new Error('rollback');
        }),
      );
      const run = (await t.durable.getRun(a.runId))!;
      expect(run).toMatchObject({ status: 'pending', holdsKey: true, error: null, finishedAt: null });
      expect(await countRuns(t.schema, 'key = $1', ['tx-ce'])).toBe(1);
      expect(await activityKinds(t.schema, 'tx-ce')).toEqual([]);
    });

    it('a committed cancelExisting in a transaction replaces the holder', async () => {
      const a = await t.durable.start('l_close', {}, { key: 'tx-ce2' });
      let b = '';
      await ds.transaction(async (manager) => {
        b = (await t.durable.start('l_close', {}, { key: 'tx-ce2', manager, onDuplicate: 'cancelExisting' })).runId;
      });
      expect((await t.durable.getRun(a.runId))!).toMatchObject({ status: 'cancelled', holdsKey: false });
      expect(await holdersOf(t.schema, 'l_close', 'tx-ce2')).toEqual([b]);
    });

    it('a cancelExisting of a holder that once waited behind another, with a run waiting behind it now, replaces it and keeps the transaction usable', async () => {
      const key = 'tx-ce-former-waiter';
      const a = await t.durable.start('l_close', {}, { key });
      await forceStatus(t.schema, a.runId, 'running');
      const w = await t.durable.start('l_close', {}, { key, onDuplicate: 'runAgain' });
      // a ends: w takes the key, then waits for an event; w2 waits behind it
      await forceStatus(t.schema, a.runId, 'completed');
      expect(await holdersOf(t.schema, 'l_close', key)).toEqual([w.runId]);
      await forceStatus(t.schema, w.runId, 'waiting');
      const w2 = await t.durable.start('l_close', {}, { key, onDuplicate: 'runAgain' });
      let b = '';
      await ds.transaction(async (manager) => {
        b = (await t.durable.start('l_close', {}, { key, manager, onDuplicate: 'cancelExisting' })).runId;
        await manager.query(`INSERT INTO ${ident(t.schema)}.articles (title) VALUES ($1)`, [key]);
      });
      expect(await articles(key)).toBe(1);
      expect((await t.durable.getRun(w.runId))!).toMatchObject({ status: 'cancelled', holdsKey: false });
      expect(await holdersOf(t.schema, 'l_close', key)).toEqual([b]);
      expect((await t.durable.getRun(w2.runId))!.status).toBe('waiting');
    });

    it('an input whose toJSON gives what JSON or PostgreSQL cannot store is refused before anything is written, and the transaction goes on', async () => {
      const key = 'tx-tojson';
      const bad = [
        { d: { toJSON: () => 'a\u0000b' } },
        { d: { toJSON: () => BigInt(1) } },
        {
          d: {
            toJSON: () => {
              throw new Error('no JSON today');
            },
          },
        },
      ];
      await ds.transaction(async (manager) => {
        for (const input of bad) {
          await expect(t.durable.start('l_close', input, { key, manager })).rejects.toBeInstanceOf(DurableValidationError);
        }
        await manager.query(`INSERT INTO ${ident(t.schema)}.articles (title) VALUES ($1)`, [key]);
      });
      expect(await articles(key)).toBe(1);
      expect(await countRuns(t.schema, 'key = $1', [key])).toBe(0);
      // what JSON.stringify stores, as before: a Date's ISO string; a toJSON giving a copy of the
      // object (itself with a toJSON) or the object itself (its function fields dropped)
      class Copies {
        x = 1;
        toJSON = () => ({ ...this });
      }
      class Itself {
        y = 2;
        f = () => 3;
        toJSON() {
          return this;
        }
      }
      const at = new Date('2026-01-02T03:04:05.000Z');
      const { runId } = await t.durable.start('l_close', { at, copies: new Copies(), itself: new Itself() } as never, { key });
      expect((await t.durable.getRun(runId))!.input).toEqual({ at: at.toISOString(), copies: { x: 1 }, itself: { y: 2 } });
    });

    it('a rollback undoes a runAgain waiting run', async () => {
      const a = await t.durable.start('l_close', {}, { key: 'tx-ra' });
      await forceStatus(t.schema, a.runId, 'running');
      await rejection(
        ds.transaction(async (manager) => {
          const r = await t.durable.start('l_close', {}, { key: 'tx-ra', manager, onDuplicate: 'runAgain' });
          expect(r.outcome).toBe('runAgain');
          expect(r.runId).not.toBe(a.runId);
          throw new Error('rollback');
        }),
      );
      expect(await countRuns(t.schema, 'key = $1', ['tx-ra'])).toBe(1);
    });
  });

  describe('sendEvent inside a transaction', () => {
    it('is atomic with the start: a rollback delivers nothing, a commit delivers', async () => {
      const ds = new DataSource({ type: 'postgres', url: databaseUrl() });
      await ds.initialize();
      try {
        const t = await createApp({ workflows: ALL });
        const h = await t.durable.start('l_close', { event: 'upd' }, { key: 'tx-se' });
        await waitFor(async () => (await t.durable.getRun(h.runId))?.status === 'waiting');
        await rejection(
          ds.transaction(async (manager) => {
            const r = await t.durable.start('l_close', { v: 1 } as never, { key: 'tx-se', manager, onDuplicate: { sendEvent: 'upd' } });
            expect(r).toEqual({ runId: h.runId, outcome: 'sendEvent' });
            throw new Error('rollback');
          }),
        );
        expect((await t.durable.getRun(h.runId))!.status).toBe('waiting');
        await ds.transaction(async (manager) => {
          await t.durable.start('l_close', { v: 2 } as never, { key: 'tx-se', manager, onDuplicate: { sendEvent: 'upd' } });
        });
        const done = await t.durable.waitForRun(h.runId, { timeout: 10_000 });
        expect(done.result).toEqual({ event: { v: 2 } });
      } finally {
        await ds.destroy();
      }
    });
  });

  describe('retry', () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await createApp({ workflows: ALL });
    });

    /** A run of `l_never` that failed with `key`, whose key was then released. */
    async function failedAndReleased(key: string) {
      failing.add(key);
      const a = await t.durable.start('l_never', { n: 1 }, { key });
      await t.durable.waitForRun(a.runId, { timeout: 10_000 });
      await t.durable.releaseKey(a.runId, { by: 'ops' });
      failing.delete(key);
      return a;
    }

    it('a failed run that still holds its key: nothing changes about the key', async () => {
      failing.add('r1');
      const a = await t.durable.start('l_close', { n: 1 }, { key: 'r1' });
      expect((await t.durable.waitForRun(a.runId, { timeout: 10_000 })).status).toBe('failed');
      failing.delete('r1');
      await t.durable.retry(a.runId);
      const done = await t.durable.waitForRun(a.runId, { timeout: 10_000 });
      expect(done).toMatchObject({ status: 'completed', holdsKey: true });
      expect(await activityKinds(t.schema, 'r1')).toEqual([]);
    });

    it('takes the key back from a newer run that finished and that reuse lets go', async () => {
      failing.add('r2');
      const a = await t.durable.start('l_close', { n: 1 }, { key: 'r2' });
      await t.durable.waitForRun(a.runId, { timeout: 10_000 });
      failing.delete('r2');
      const b = await t.durable.start('l_close', { n: 2 }, { key: 'r2' });
      expect(b.outcome).toBe('created');
      expect((await t.durable.waitForRun(b.runId, { timeout: 10_000 })).status).toBe('completed');
      await t.durable.retry(a.runId);
      expect(await holdersOf(t.schema, 'l_close', 'r2')).toEqual([a.runId]);
      const done = await t.durable.waitForRun(a.runId, { timeout: 10_000 });
      expect(done).toMatchObject({ status: 'completed', holdsKey: true });
      expect((await t.durable.getRun(b.runId))!).toMatchObject({ status: 'completed', holdsKey: false });
      expect(await activityKinds(t.schema, 'r2')).toEqual(['key_handed_off', 'key_retaken']);
    });

    it('is refused with KeyTakenError(newerId) while the newer run is going, leaving the run failed', async () => {
      failing.add('r3');
      const a = await t.durable.start('l_close', { n: 1 }, { key: 'r3' });
      await t.durable.waitForRun(a.runId, { timeout: 10_000 });
      failing.delete('r3');
      const b = await t.durable.start('l_close', { gate: true } as never, { key: 'r3' });
      await waitFor(async () => (await t.durable.getRun(b.runId))?.status === 'running');
      const before = (await t.durable.getRun(a.runId))!;
      await expectKeyTaken(t.durable.retry(a.runId), b.runId);
      const after = (await t.durable.getRun(a.runId))!;
      expect(after).toMatchObject({ status: 'failed', holdsKey: false, error: before.error, attempt: before.attempt });
      expect(await holdersOf(t.schema, 'l_close', 'r3')).toEqual([b.runId]);
      gate.open();
      await t.durable.waitForRun(b.runId, { timeout: 10_000 });
    });

    it('is refused under afterFailure when the newer run completed (reuse keeps it)', async () => {
      failing.add('r4');
      const a = await t.durable.start('l_failure', { n: 1 }, { key: 'r4' });
      await t.durable.waitForRun(a.runId, { timeout: 10_000 });
      failing.delete('r4');
      const b = await t.durable.start('l_failure', { n: 2 }, { key: 'r4' });
      expect(b.outcome).toBe('created');
      await t.durable.waitForRun(b.runId, { timeout: 10_000 });
      await expectKeyTaken(t.durable.retry(a.runId), b.runId);
      expect((await t.durable.getRun(a.runId))!).toMatchObject({ status: 'failed', holdsKey: false });
    });

    it('takes back a key nobody holds (released)', async () => {
      const a = await failedAndReleased('r5');
      await t.durable.retry(a.runId);
      expect(await holdersOf(t.schema, 'l_never', 'r5')).toEqual([a.runId]);
      expect((await t.durable.waitForRun(a.runId, { timeout: 10_000 })).status).toBe('completed');
    });

    it('a start that takes the free key while retry is claiming it: retry is refused with KeyTakenError(newId), no raw error', async () => {
      const a = await failedAndReleased('r6');
      // another transaction inserts a holder of r6 and commits only once retry waits on it
      const other = new Client({ connectionString: databaseUrl() });
      await other.connect();
      try {
        const newId = randomUUID();
        await other.query('BEGIN');
        await other.query(`INSERT INTO ${ident(t.schema)}.runs (id, workflow, key, holds_key, run_at) VALUES ($1, 'l_never', 'r6', true, 'infinity')`, [newId]);
        const retried = t.durable.retry(a.runId).then(
          () => 'retried',
          (err: unknown) => err,
        );
        await waitForLockWait(['SET holds_key = true'], 'retry never waited for the uncommitted holder');
        await other.query('COMMIT');
        const err = await retried;
        expect(err).toBeInstanceOf(KeyTakenError);
        expect((err as KeyTakenError).holderId).toBe(newId);
        expect((await t.durable.getRun(a.runId))!).toMatchObject({ status: 'failed', holdsKey: false });
        expect(await holdersOf(t.schema, 'l_never', 'r6')).toEqual([newId]);
      } finally {
        await other.end();
      }
    });
  });

  describe('rerun', () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await createApp({ workflows: ALL, options: { worker: false } });
    });

    it('starts a fresh copy of a finished run with the same key, following the start rules', async () => {
      const a = await t.durable.start('l_close', { n: 1 }, { key: 'rr1' });
      await forceStatus(t.schema, a.runId, 'completed');
      const b = await t.durable.rerun(a.runId);
      expect(b.outcome).toBe('created');
      expect((await t.durable.getRun(b.runId))!).toMatchObject({ key: 'rr1', holdsKey: true, input: { n: 1 }, workflow: 'l_close' });
      await forceStatus(t.schema, b.runId, 'failed');
      const c = await t.durable.rerun(a.runId, { input: { n: 3 } });
      expect((await t.durable.getRun(c.runId))!).toMatchObject({ key: 'rr1', holdsKey: true, input: { n: 3 } });
      expect(await holdersOf(t.schema, 'l_close', 'rr1')).toEqual([c.runId]);
    });

    it('keeps the priority the run was started with', async () => {
      const a = await t.durable.start('l_close', { n: 1 }, { key: 'rr-prio', priority: 7 });
      await forceStatus(t.schema, a.runId, 'completed');
      const b = await t.durable.rerun(a.runId);
      expect((await t.durable.getRun(b.runId))!.priority).toBe(7);
    });

    it('rejects with KeyTakenError(holderId) instead of returning a going holder', async () => {
      const a = await t.durable.start('l_close', { n: 1 }, { key: 'rr2' });
      await forceStatus(t.schema, a.runId, 'failed');
      const b = await t.durable.start('l_close', { n: 2 }, { key: 'rr2' });
      const before = await countRuns(t.schema);
      await expectKeyTaken(t.durable.rerun(a.runId), b.runId);
      expect(await countRuns(t.schema)).toBe(before);
    });

    it('rejects with KeyTakenError(holderId) when reuse keeps a finished holder (never, afterFailure)', async () => {
      const a = await t.durable.start('l_never', {}, { key: 'rr3' });
      await forceStatus(t.schema, a.runId, 'completed');
      await expectKeyTaken(t.durable.rerun(a.runId), a.runId);
      const c = await t.durable.start('l_failure', {}, { key: 'rr3' });
      await forceStatus(t.schema, c.runId, 'completed');
      await expectKeyTaken(t.durable.rerun(c.runId), c.runId);
      expect(await countRuns(t.schema, 'key = $1', ['rr3'])).toBe(2);
    });

    it('never returns the holder, even one in its debounce wait', async () => {
      const a = await t.durable.start('l_debounce', { n: 1 }, { key: 'rr-db' });
      await forceStatus(t.schema, a.runId, 'completed');
      const b = await t.durable.start('l_debounce', { n: 2 }, { key: 'rr-db' });
      expect(b.outcome).toBe('created'); // pending, in its debounce wait
      await expectKeyTaken(t.durable.rerun(a.runId), b.runId);
      expect((await t.durable.getRun(b.runId))!.input).toEqual({ n: 2 });
    });

    it('refuses a run that is still going with NotFinishedError', async () => {
      const a = await t.durable.start('l_close', {}, { key: 'rr4' });
      await expect(t.durable.rerun(a.runId)).rejects.toBeInstanceOf(NotFinishedError);
    });
  });

  describe('releaseKey', () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await createApp({ workflows: ALL, options: { worker: false } });
    });

    it('a run that is still going → NotFinishedError (pending, running, waiting, compensating)', async () => {
      for (const status of ['pending', 'running', 'waiting', 'compensating'] as RunStatus[]) {
        const a = await t.durable.start('l_never', {}, { key: `rel-going-${status}` });
        if (status !== 'pending') await forceStatus(t.schema, a.runId, status);
        const err = await rejection(t.durable.releaseKey(a.runId, { by: 'ops' }));
        expect(err).toBeInstanceOf(NotFinishedError);
        expect((err as NotFinishedError).code).toBe('not_finished');
        expect(await holdersOf(t.schema, 'l_never', `rel-going-${status}`)).toEqual([a.runId]);
      }
    });

    it('by: recorded as given, null when absent or null; anything but a storable string of 1–255 bytes → DurableValidationError, key kept', async () => {
      const released = async (by?: string | null) => {
        const a = await t.durable.start('l_never', {}, { key: `rel-by-${randomUUID()}` });
        await forceStatus(t.schema, a.runId, 'completed');
        await t.durable.releaseKey(a.runId, by === undefined ? undefined : { by: by as string });
        const [event] = await t.durable.listActivity({ runId: a.runId, kinds: ['key_released'] });
        return event.details.by;
      };
      expect(await released('ops@example.com')).toBe('ops@example.com');
      expect(await released()).toBeNull();
      expect(await released(null)).toBeNull();
      const a = await t.durable.start('l_never', {}, { key: 'rel-by-bad' });
      await forceStatus(t.schema, a.runId, 'completed');
      for (const by of ['', 'x'.repeat(256), 'ops\u0000', 42]) {
        await expect(t.durable.releaseKey(a.runId, { by: by as never })).rejects.toBeInstanceOf(DurableValidationError);
      }
      expect(await holdersOf(t.schema, 'l_never', 'rel-by-bad')).toEqual([a.runId]);
      expect(await t.durable.listActivity({ runId: a.runId })).toEqual([]);
    });

    it('a run without a key, or whose key is already released or taken by a newer run → NoKeyError', async () => {
      const a = await t.durable.start('l_never', {});
      await forceStatus(t.schema, a.runId, 'completed');
      const e1 = await rejection(t.durable.releaseKey(a.runId, { by: 'ops' }));
      expect(e1).toBeInstanceOf(NoKeyError);
      expect((e1 as NoKeyError).code).toBe('no_key');
      const b = await t.durable.start('l_never', {}, { key: 'rel-twice' });
      await forceStatus(t.schema, b.runId, 'completed');
      await t.durable.releaseKey(b.runId, { by: 'ops' });
      await expect(t.durable.releaseKey(b.runId, { by: 'ops' })).rejects.toBeInstanceOf(NoKeyError);
      const c = await t.durable.start('l_close', {}, { key: 'rel-newer' });
      await forceStatus(t.schema, c.runId, 'completed');
      await t.durable.start('l_close', {}, { key: 'rel-newer' });
      await expect(t.durable.releaseKey(c.runId, { by: 'ops' })).rejects.toBeInstanceOf(NoKeyError);
    });

    it('lets a finished run’s key go even under never; the run keeps its history and key; a rerun then creates', async () => {
      const a = await t.durable.start('l_never', { id: 'INV-2208' } as never, { key: 'invoice:INV-2208' });
      await sql(`UPDATE ${ident(t.schema)}.runs SET result = '{"sent":true}' WHERE id = $1`, [a.runId]);
      await forceStatus(t.schema, a.runId, 'completed');
      const before = (await t.durable.getRun(a.runId))!;
      await expect(t.durable.start('l_never', {}, { key: 'invoice:INV-2208', onDuplicate: 'error' })).rejects.toBeInstanceOf(KeyTakenError);
      await t.durable.releaseKey(a.runId, { by: 'ops@example.com' });
      const after = (await t.durable.getRun(a.runId))!;
      expect(after).toMatchObject({
        status: 'completed',
        key: 'invoice:INV-2208',
        holdsKey: false,
        input: before.input,
        result: { sent: true },
        finishedAt: before.finishedAt,
      });
      const r = await t.durable.rerun(a.runId);
      expect(r.outcome).toBe('created');
      expect(r.runId).not.toBe(a.runId);
      expect((await t.durable.getRun(r.runId))!).toMatchObject({ key: 'invoice:INV-2208', holdsKey: true, input: { id: 'INV-2208' } });
      const listed = await t.durable.listRuns({ key: 'invoice:INV-2208' });
      expect(listed.map((x) => [x.id, x.holdsKey])).toEqual(
        expect.arrayContaining([
          [a.runId, false],
          [r.runId, true],
        ]),
      );
    });

    it('works on every finished status', async () => {
      for (const status of FINAL) {
        const a = await t.durable.start('l_never', {}, { key: `rel-fin-${status}` });
        await forceStatus(t.schema, a.runId, status);
        await t.durable.releaseKey(a.runId, { by: 'ops' });
        expect((await t.durable.start('l_never', {}, { key: `rel-fin-${status}` })).outcome).toBe('created');
      }
    });
  });

  describe('pruning', () => {
    it('pruning a finished holder frees its key; a going holder is not pruned and keeps it', async () => {
      const t = await createApp({ workflows: ALL, options: { worker: false } });
      const a = await t.durable.start('l_never', {}, { key: 'pr' });
      await forceStatus(t.schema, a.runId, 'completed');
      await sql(`UPDATE ${ident(t.schema)}.runs SET finished_at = now() - interval '2 days' WHERE id = $1`, [a.runId]);
      const g = await t.durable.start('l_never', {}, { key: 'pr-going' });
      expect(await t.durable.start('l_never', {}, { key: 'pr' })).toEqual({ runId: a.runId, outcome: 'useExisting' });
      const pruned = await t.durable.prune({ olderThan: '1d' });
      expect(pruned.runs).toBe(1);
      expect(await t.durable.getRun(a.runId)).toBeNull();
      const b = await t.durable.start('l_never', {}, { key: 'pr' });
      expect(b.outcome).toBe('created');
      expect(await holdersOf(t.schema, 'l_never', 'pr')).toEqual([b.runId]);
      expect(await t.durable.start('l_never', {}, { key: 'pr-going' })).toEqual({ runId: g.runId, outcome: 'useExisting' });
    });
  });
});
