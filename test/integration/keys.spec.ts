/**
 * Workflow keys through real starts (docs/keys.md, "The rules" and "reuse"):
 * the reuse table for every holder status × reuse policy, keys scoped per workflow, reuse read when
 * a start runs, status moves (claim, retry attempts, recovery, cancel) never freeing a key, and key
 * validation writing nothing.
 */
import { DurableError, DurableValidationError, KeyContendedError, RunContext, RunStatus, Step, Workflow } from '../../src';
import { countRuns, createApp, freshSchema, Gate, ident, sql, TestApp, waitFor } from '../support';
import { forceStatus, holdersOf, rejection } from '../support/keys';

let gate = new Gate();
const executed: string[] = [];
/** runId → attempts seen by the flaky step */
const attempts: Record<string, number> = {};

type In = { fail?: boolean; block?: boolean; wait?: string; n?: number } | null;

async function behave(ctx: RunContext<In>) {
  executed.push(ctx.runId);
  const i = ctx.input ?? {};
  if (i.fail) throw new Error('boom');
  if (i.block) await gate.wait(ctx.signal);
  if (i.wait) return ctx.waitForEvent(i.wait);
  return { ok: true, n: i.n ?? null };
}

@Workflow('k_close', { retry: { attempts: 1 } })
class KClose {
  @Step()
  async go(ctx: RunContext<In>) {
    return behave(ctx);
  }
}

@Workflow('k_failure', { reuse: 'afterFailure', retry: { attempts: 1 } })
class KFailure {
  @Step()
  async go(ctx: RunContext<In>) {
    return behave(ctx);
  }
}

@Workflow('k_never', { reuse: 'never', retry: { attempts: 1 } })
class KNever {
  @Step()
  async go(ctx: RunContext<In>) {
    return behave(ctx);
  }
}

@Workflow('k_other', { retry: { attempts: 1 } })
class KOther {
  @Step()
  async go(ctx: RunContext<In>) {
    return behave(ctx);
  }
}

@Workflow('k_flaky', { retry: { attempts: 2, backoff: 'fixed', initialDelay: '1500ms' } })
class KFlaky {
  @Step()
  async go(ctx: RunContext<In>) {
    attempts[ctx.runId] = (attempts[ctx.runId] ?? 0) + 1;
    if (attempts[ctx.runId] === 1) throw new Error('first attempt fails');
    return { attempt: attempts[ctx.runId] };
  }
}

// Two definitions of one workflow name with different reuse, for two apps on one schema.
@Workflow('k_switch', { reuse: 'never', retry: { attempts: 1 } })
class KSwitchNever {
  @Step()
  async go(ctx: RunContext<In>) {
    return behave(ctx);
  }
}

@Workflow('k_switch', { reuse: 'afterClose', retry: { attempts: 1 } })
class KSwitchClose {
  @Step()
  async go(ctx: RunContext<In>) {
    return behave(ctx);
  }
}

const childKeys: Record<string, unknown> = {};
@Workflow('k_child', { retry: { attempts: 1 } })
class KChild {
  @Step()
  async go(ctx: RunContext<In>) {
    childKeys[ctx.runId] = ctx.key ?? null;
    return ctx.key ?? null;
  }
}

@Workflow('k_parent', { retry: { attempts: 1 } })
class KParent {
  @Step()
  async one(ctx: RunContext<In>) {
    return ctx.callWorkflow('k_child', {});
  }

  @Step()
  async many(ctx: RunContext<In>) {
    return ctx.parallel([
      { workflow: 'k_child', input: {} },
      { workflow: 'k_child', input: {} },
    ]);
  }
}

const ALL = [KClose, KFailure, KNever, KOther, KFlaky, KChild, KParent];

/** Puts a run into `status` with raw SQL (the holder statuses no worker is needed for). */

async function holdsKey(schema: string, id: string): Promise<boolean> {
  const [row] = await sql(`SELECT holds_key FROM ${ident(schema)}.runs WHERE id = $1`, [id]);
  return row.holds_key;
}

type Reuse = 'afterClose' | 'afterFailure' | 'never';
const WF: Record<Reuse, string> = { afterClose: 'k_close', afterFailure: 'k_failure', never: 'k_never' };

/** The spec's "Choosing reuse" table. */
const TABLE: Record<RunStatus, Record<Reuse, 'taken' | 'free'>> = {
  pending: { afterClose: 'taken', afterFailure: 'taken', never: 'taken' },
  running: { afterClose: 'taken', afterFailure: 'taken', never: 'taken' },
  waiting: { afterClose: 'taken', afterFailure: 'taken', never: 'taken' },
  compensating: { afterClose: 'taken', afterFailure: 'taken', never: 'taken' },
  completed: { afterClose: 'free', afterFailure: 'taken', never: 'taken' },
  failed: { afterClose: 'free', afterFailure: 'free', never: 'taken' },
  cancelled: { afterClose: 'free', afterFailure: 'free', never: 'taken' },
  compensated: { afterClose: 'free', afterFailure: 'free', never: 'taken' },
  compensation_failed: { afterClose: 'free', afterFailure: 'free', never: 'taken' },
};

const CELLS: [RunStatus, Reuse, 'taken' | 'free'][] = [];
for (const status of Object.keys(TABLE) as RunStatus[]) {
  for (const reuse of ['afterClose', 'afterFailure', 'never'] as Reuse[]) CELLS.push([status, reuse, TABLE[status][reuse]]);
}

describe('workflow keys', () => {
  beforeEach(() => {
    gate = new Gate();
    executed.length = 0;
  });

  describe('the reuse table, every cell (holder status set in the database, start through the API)', () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await createApp({ workflows: ALL, options: { worker: false } });
    });

    it.each(CELLS)('holder %s, reuse %s → %s', async (status, reuse, expected) => {
      const wf = WF[reuse];
      const key = `cell:${status}:${reuse}`;
      const first = await t.durable.start(wf, { n: 1 }, { key });
      expect(first.outcome).toBe('created');
      await forceStatus(t.schema, first.runId, status);
      const before = await countRuns(t.schema);
      const second = await t.durable.start(wf, { n: 2 }, { key });
      if (expected === 'taken') {
        expect(second).toEqual({ runId: first.runId, outcome: 'useExisting' });
        expect(await countRuns(t.schema)).toBe(before);
        expect(await holdsKey(t.schema, first.runId)).toBe(true);
        expect((await t.durable.getRun(first.runId))!.status).toBe(status);
      } else {
        expect(second.outcome).toBe('created');
        expect(second.runId).not.toBe(first.runId);
        expect(await countRuns(t.schema)).toBe(before + 1);
        expect(await holdersOf(t.schema, wf, key)).toEqual([second.runId]);
        const old = (await t.durable.getRun(first.runId))!;
        expect(old.holdsKey).toBe(false);
        expect(old.key).toBe(key); // the old run keeps its key value and its status
        expect(old.status).toBe(status);
        const fresh = (await t.durable.getRun(second.runId))!;
        expect(fresh).toMatchObject({ key, holdsKey: true, status: 'pending', input: { n: 2 } });
      }
    });
  });

  describe('the reuse table with real holders (worker running)', () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await createApp({ workflows: ALL });
    });

    const REUSES: Reuse[] = ['afterClose', 'afterFailure', 'never'];

    it.each(REUSES)('a completed holder under %s', async (reuse) => {
      const wf = WF[reuse];
      const key = `real:completed:${reuse}`;
      const a = await t.durable.start(wf, { n: 1 }, { key });
      expect((await t.durable.waitForRun(a.runId, { timeout: 10_000 })).status).toBe('completed');
      const b = await t.durable.start(wf, { n: 2 }, { key });
      if (TABLE.completed[reuse] === 'free') {
        expect(b.outcome).toBe('created');
        expect((await t.durable.waitForRun(b.runId, { timeout: 10_000 })).status).toBe('completed');
        expect(await holdersOf(t.schema, wf, key)).toEqual([b.runId]);
      } else {
        expect(b).toEqual({ runId: a.runId, outcome: 'useExisting' });
        expect(await countRuns(t.schema, 'key = $1', [key])).toBe(1);
      }
    });

    it.each(REUSES)('a failed holder under %s', async (reuse) => {
      const wf = WF[reuse];
      const key = `real:failed:${reuse}`;
      const a = await t.durable.start(wf, { fail: true }, { key });
      expect((await t.durable.waitForRun(a.runId, { timeout: 10_000 })).status).toBe('failed');
      expect(await holdsKey(t.schema, a.runId)).toBe(true); // failing does not free the key
      const b = await t.durable.start(wf, { n: 2 }, { key });
      if (TABLE.failed[reuse] === 'free') {
        expect(b.outcome).toBe('created');
        expect(await holdersOf(t.schema, wf, key)).toEqual([b.runId]);
      } else {
        expect(b).toEqual({ runId: a.runId, outcome: 'useExisting' });
        expect(await countRuns(t.schema, 'key = $1', [key])).toBe(1);
      }
    });

    it.each(REUSES)('a running holder (claimed, mid-step) under %s is taken', async (reuse) => {
      const wf = WF[reuse];
      const key = `real:running:${reuse}`;
      const a = await t.durable.start(wf, { block: true }, { key });
      await waitFor(async () => (await t.durable.getRun(a.runId))?.status === 'running');
      expect(await holdsKey(t.schema, a.runId)).toBe(true); // claiming keeps the key
      const b = await t.durable.start(wf, { n: 2 }, { key });
      expect(b).toEqual({ runId: a.runId, outcome: 'useExisting' });
      gate.open();
      expect((await t.durable.waitForRun(a.runId, { timeout: 10_000 })).status).toBe('completed');
      expect(await countRuns(t.schema, 'key = $1', [key])).toBe(1);
    });

    it.each(REUSES)('a waiting holder (waitForEvent) under %s is taken', async (reuse) => {
      const wf = WF[reuse];
      const key = `real:waiting:${reuse}`;
      const a = await t.durable.start(wf, { wait: 'never_sent' }, { key });
      await waitFor(async () => (await t.durable.getRun(a.runId))?.status === 'waiting');
      expect(await holdsKey(t.schema, a.runId)).toBe(true);
      const b = await t.durable.start(wf, { n: 2 }, { key });
      expect(b).toEqual({ runId: a.runId, outcome: 'useExisting' });
      expect(await countRuns(t.schema, 'key = $1', [key])).toBe(1);
      await t.durable.cancel(a.runId);
    });

    it.each(REUSES)('a cancelled holder under %s (cancel keeps the key until a start takes it)', async (reuse) => {
      const wf = WF[reuse];
      const key = `real:cancelled:${reuse}`;
      const a = await t.durable.start(wf, { block: true }, { key });
      await waitFor(async () => (await t.durable.getRun(a.runId))?.status === 'running');
      await t.durable.cancel(a.runId, { reason: 'test' });
      expect((await t.durable.waitForRun(a.runId, { timeout: 10_000 })).status).toBe('cancelled');
      expect(await holdsKey(t.schema, a.runId)).toBe(true); // cancelling never frees a key
      gate.open();
      const b = await t.durable.start(wf, { n: 2 }, { key });
      if (TABLE.cancelled[reuse] === 'free') {
        expect(b.outcome).toBe('created');
        expect(await holdersOf(t.schema, wf, key)).toEqual([b.runId]);
      } else {
        expect(b).toEqual({ runId: a.runId, outcome: 'useExisting' });
      }
    });

    it('a start that finds the key held runs nothing inline and creates nothing', async () => {
      const key = 'real:noinline';
      const a = await t.durable.start('k_close', { block: true }, { key });
      await waitFor(async () => (await t.durable.getRun(a.runId))?.status === 'running');
      const runsBefore = await countRuns(t.schema);
      const execBefore = executed.length;
      for (let i = 0; i < 5; i++) {
        expect(await t.durable.start('k_close', { n: i }, { key })).toEqual({ runId: a.runId, outcome: 'useExisting' });
      }
      expect(await countRuns(t.schema)).toBe(runsBefore);
      expect(executed.length).toBe(execBefore);
      gate.open();
      await t.durable.waitForRun(a.runId, { timeout: 10_000 });
      expect(executed.filter((id) => id === a.runId)).toHaveLength(1);
    });
  });

  describe('scope and reuse read at start time', () => {
    it('keys are scoped per workflow: one key on two workflows makes two holders', async () => {
      const t = await createApp({ workflows: ALL, options: { worker: false } });
      const a = await t.durable.start('k_close', {}, { key: 'article:42' });
      const b = await t.durable.start('k_other', {}, { key: 'article:42' });
      const c = await t.durable.start(KOther, {}, { key: 'article:42' });
      expect(a.outcome).toBe('created');
      expect(b.outcome).toBe('created');
      expect(b.runId).not.toBe(a.runId);
      expect(c).toEqual({ runId: b.runId, outcome: 'useExisting' });
      expect(await holdersOf(t.schema, 'k_close', 'article:42')).toEqual([a.runId]);
      expect(await holdersOf(t.schema, 'k_other', 'article:42')).toEqual([b.runId]);
      const listed = await t.durable.listRuns({ key: 'article:42' });
      expect(listed.map((r) => r.id).sort()).toEqual([a.runId, b.runId].sort());
      expect(listed.every((r) => r.holdsKey)).toBe(true);
    });

    it('reuse is read when a start runs: changing it on the workflow applies to an existing run', async () => {
      const schema = freshSchema();
      const before = await createApp({ workflows: [KSwitchNever], schema, options: { worker: false } });
      const a = await before.durable.start('k_switch', {}, { key: 'sw' });
      await forceStatus(schema, a.runId, 'completed');
      expect(await before.durable.start('k_switch', {}, { key: 'sw' })).toEqual({ runId: a.runId, outcome: 'useExisting' });
      await before.close();
      // the "deploy": same workflow name, reuse now afterClose
      const after = await createApp({ workflows: [KSwitchClose], schema, options: { worker: false } });
      const b = await after.durable.start('k_switch', {}, { key: 'sw' });
      expect(b.outcome).toBe('created');
      expect(await holdersOf(schema, 'k_switch', 'sw')).toEqual([b.runId]);
    });

    it('reuse cannot be passed to start: a per-call reuse does not change the answer', async () => {
      const t = await createApp({ workflows: ALL, options: { worker: false } });
      const a = await t.durable.start('k_never', {}, { key: 'nv' });
      await forceStatus(t.schema, a.runId, 'completed');
      const b = await t.durable.start('k_never', {}, { key: 'nv', reuse: 'afterClose' } as never).catch((err: unknown) => err);
      // either refused as invalid, or ignored (the holder comes back) — never a new run
      if (b instanceof Error) expect(b).toBeInstanceOf(DurableValidationError);
      else expect(b).toEqual({ runId: a.runId, outcome: 'useExisting' });
      expect(await countRuns(t.schema)).toBe(1);
    });
  });

  describe('keys are not inherited', () => {
    it('callWorkflow and parallel children start without a key', async () => {
      const t = await createApp({ workflows: ALL });
      const p = await t.durable.start('k_parent', {}, { key: 'parent:1' });
      const done = await t.durable.waitForRun(p.runId, { timeout: 15_000 });
      expect(done.status).toBe('completed');
      expect(done.result).toEqual([null, null]);
      const children = await t.durable.listRuns({ workflow: 'k_child' });
      expect(children).toHaveLength(3);
      for (const c of children) expect(c).toMatchObject({ key: null, holdsKey: false });
      expect(await holdersOf(t.schema, 'k_parent', 'parent:1')).toEqual([p.runId]);
    });
  });

  describe('status moves never free a key or fail on one', () => {
    it('between retry attempts the run keeps its key and duplicates get it back', async () => {
      const t = await createApp({ workflows: ALL });
      const a = await t.durable.start('k_flaky', {}, { key: 'flaky' });
      await waitFor(() => attempts[a.runId] === 1);
      // the first attempt failed; the step waits for its retry delay
      const mid = await waitFor(async () => {
        const r = await t.durable.getRun(a.runId);
        return r && r.status !== 'running' ? r : null;
      });
      expect(['pending', 'waiting']).toContain(mid.status);
      expect(mid.holdsKey).toBe(true);
      expect(await t.durable.start('k_flaky', {}, { key: 'flaky' })).toEqual({ runId: a.runId, outcome: 'useExisting' });
      const done = await t.durable.waitForRun(a.runId, { timeout: 15_000 });
      expect(done.status).toBe('completed');
      expect(done.holdsKey).toBe(true);
      expect(attempts[a.runId]).toBe(2);
      expect(await countRuns(t.schema)).toBe(1);
    });

    it('recovery from a dead node keeps the key', async () => {
      const schema = freshSchema();
      const starter = await createApp({ workflows: ALL, schema, options: { worker: false } });
      const a = await starter.durable.start('k_close', { n: 7 }, { key: 'orphan' });
      // as if claimed by a node that died mid-step
      await sql(
        `UPDATE ${ident(schema)}.runs SET status = 'running', node_id = 'ghost-node', started_at = now(), epoch = epoch + 1,
           attempt = 0 WHERE id = $1`,
        [a.runId],
      );
      expect(await starter.durable.start('k_close', {}, { key: 'orphan' })).toEqual({ runId: a.runId, outcome: 'useExisting' });
      const worker = await createApp({ workflows: ALL, schema });
      const done = await worker.durable.waitForRun(a.runId, { timeout: 15_000 });
      expect(done.status).toBe('completed');
      expect(done.holdsKey).toBe(true);
      expect(await countRuns(schema)).toBe(1);
      expect(await holdersOf(schema, 'k_close', 'orphan')).toEqual([a.runId]);
    });

    it('cancelling a pending holder does not fail and keeps holds_key; under never the key stays taken', async () => {
      const t = await createApp({ workflows: ALL, options: { worker: false } });
      const a = await t.durable.start('k_never', {}, { key: 'c1' });
      await t.durable.cancel(a.runId);
      const run = (await t.durable.getRun(a.runId))!;
      expect(run).toMatchObject({ status: 'cancelled', holdsKey: true, key: 'c1' });
      expect(await t.durable.start('k_never', {}, { key: 'c1' })).toEqual({ runId: a.runId, outcome: 'useExisting' });
    });
  });

  describe('KeyContendedError', () => {
    it('after the key changed hands three times during one start (a test trigger plays the racing starts)', async () => {
      const t = await createApp({ workflows: ALL, options: { worker: false } });
      const S = ident(t.schema);
      // Every time our start inserts its run, a "racer" slips in first and takes the key, then finishes at once.
      await sql(`
        CREATE FUNCTION ${S}.test_racer() RETURNS trigger LANGUAGE plpgsql AS $fn$
        BEGIN
          INSERT INTO ${S}.runs (id, workflow, key, holds_key, status, finished_at, started_at)
          VALUES (gen_random_uuid(), NEW.workflow, NEW.key, true, 'completed', now(), now());
          RETURN NEW;
        END $fn$`);
      await sql(`
        CREATE TRIGGER test_racer BEFORE INSERT ON ${S}.runs FOR EACH ROW
        WHEN (NEW.key = 'contended' AND NEW.status = 'pending') EXECUTE FUNCTION ${S}.test_racer()`);
      const err = await rejection(t.durable.start('k_close', { mine: true } as never, { key: 'contended' }));
      await sql(`DROP TRIGGER test_racer ON ${S}.runs`);
      expect(err).toBeInstanceOf(KeyContendedError);
      expect((err as KeyContendedError).code).toBe('key_contended');
      // none of the runs left is ours, and exactly one run holds the key
      expect(await countRuns(t.schema, `input->>'mine' = 'true'`)).toBe(0);
      expect(await holdersOf(t.schema, 'k_close', 'contended')).toHaveLength(1);
      // it gave up after the key changed hands three times: one racer took the free key at the first
      // insert, and one more at each of the three tries that followed (each after taking over the last)
      expect(await countRuns(t.schema, `key = 'contended' AND status = 'completed'`)).toBe(4);
      // trying again is safe
      expect((await t.durable.start('k_close', {}, { key: 'contended' })).outcome).toBe('created');
    });
  });

  describe('key validation', () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await createApp({ workflows: ALL, options: { worker: false } });
    });

    it.each([
      ['an empty key', ''],
      ['a 256-byte key', 'k'.repeat(256)],
      ['a 128-char key of 256 bytes (2-byte chars)', 'é'.repeat(128)],
      ['a 64-char key of 256 bytes (4-byte chars)', '😀'.repeat(64)],
      ['a number', 42],
      ['an object', { id: 42 }],
      ['an array', ['a']],
      ['a boolean', false],
    ])('%s → DurableValidationError and nothing written', async (_label, key) => {
      const runs = await countRuns(t.schema);
      const [{ n: activity }] = await sql(`SELECT count(*)::int AS n FROM ${ident(t.schema)}.activity`);
      const err = await rejection(t.durable.start('k_close', { n: 1 }, { key: key as never }));
      expect(err).toBeInstanceOf(DurableValidationError);
      expect(err).toBeInstanceOf(DurableError);
      expect((err as DurableValidationError).code).toBe('invalid');
      expect(Array.isArray((err as DurableValidationError).errors)).toBe(true);
      const errM = await rejection(
        t.durable.startMany('k_close', [
          { input: {}, key: 'fine' },
          { input: {}, key: key as never },
        ]),
      );
      expect(errM).toBeInstanceOf(DurableValidationError);
      expect(await countRuns(t.schema)).toBe(runs);
      const [{ n: after }] = await sql(`SELECT count(*)::int AS n FROM ${ident(t.schema)}.activity`);
      expect(after).toBe(activity);
    });

    it.each([
      ['an unknown mode', 'k_close', 'cancel_existing'],
      ["'sendEvent' without its name", 'k_close', 'sendEvent'],
      ['an empty event name', 'k_close', { sendEvent: '' }],
      ['an event name that is not a string', 'k_close', { sendEvent: 42 }],
      ['an event name Postgres cannot store (NUL)', 'k_close', { sendEvent: 'upd\u0000' }],
      ['an object that is not { sendEvent }', 'k_close', { send_event: 'upd' }],
      ['a number', 'k_close', 3],
      ["'runAgain' on a reuse: 'never' workflow", 'k_never', 'runAgain'],
    ])('onDuplicate: %s → DurableValidationError before anything is written, key free or held', async (_label, wf, onDuplicate) => {
      const runs = await countRuns(t.schema);
      const [{ n: activity }] = await sql(`SELECT count(*)::int AS n FROM ${ident(t.schema)}.activity`);
      const free = await rejection(t.durable.start(wf, { n: 1 }, { key: `bad-mode-free-${wf}`, onDuplicate: onDuplicate as never }));
      expect(free).toBeInstanceOf(DurableValidationError);
      expect((free as DurableValidationError).message).toMatch(/onDuplicate/);
      expect(await countRuns(t.schema)).toBe(runs);
      const holder = await t.durable.start(wf, { n: 1 }, { key: `bad-mode-held-${wf}-${runs}` });
      const held = await rejection(t.durable.start(wf, { n: 2 }, { key: `bad-mode-held-${wf}-${runs}`, onDuplicate: onDuplicate as never }));
      expect(held).toBeInstanceOf(DurableValidationError);
      expect(await countRuns(t.schema)).toBe(runs + 1);
      expect((await t.durable.getRun(holder.runId))!).toMatchObject({ status: 'pending', input: { n: 1 }, readds: 0 });
      const [{ n: after }] = await sql(`SELECT count(*)::int AS n FROM ${ident(t.schema)}.activity`);
      expect(after).toBe(activity);
    });

    it('an invalid key is refused even when a holder of a similar key exists (no duplicate recorded)', async () => {
      const a = await t.durable.start('k_close', {}, { key: 'k'.repeat(255) });
      expect(a.outcome).toBe('created');
      await expect(t.durable.start('k_close', {}, { key: 'k'.repeat(256) })).rejects.toBeInstanceOf(DurableValidationError);
      expect((await t.durable.getRun(a.runId))!.readds).toBe(0);
    });

    it('255 bytes (incl. multibyte) is accepted; null means no key', async () => {
      const multi = 'é'.repeat(127) + 'x';
      const a = await t.durable.start('k_close', {}, { key: multi });
      expect(a.outcome).toBe('created');
      expect((await t.durable.getRun(a.runId))!).toMatchObject({ key: multi, holdsKey: true });
      const b = await t.durable.start('k_close', {}, { key: null });
      const c = await t.durable.start('k_close', {}, { key: null });
      expect(b.runId).not.toBe(c.runId);
      expect((await t.durable.getRun(b.runId))!).toMatchObject({ key: null, holdsKey: false });
    });
  });
});
