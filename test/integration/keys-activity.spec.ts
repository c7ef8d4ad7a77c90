/**
 * Watching keys (docs/keys.md, "Watching keys"): the activity log (key_duplicate with its
 * outcome, inputChanged, input and runsAfter; key_handed_off; key_released with by; key_retaken),
 * listActivity's filters, RunInfo.readds, listRuns({ key }) with holdsKey, listKeys, keyStats, the
 * key counters, and activity pruned after retention.activity.
 */
import { DurableError, KeyTakenError, RunContext, Step, Workflow } from '../../src';
import { DurableConnection } from '../../src/core/durable.connection';
import { createApp, databaseUrl, freshSchema, Gate, ident, sql, TestApp, waitFor, waitForLockWait } from '../support';
import { forceStatus } from '../support/keys';
import { testMeter } from '../support/metrics';
import { DataSource } from 'typeorm';

const { counter } = testMeter();

let gate = new Gate();
const failing = new Set<string>();

async function body(ctx: RunContext<{ n?: number; gate?: boolean; event?: string } | null>) {
  if (ctx.key && failing.has(ctx.key)) throw new Error('failing');
  if (ctx.input?.gate) await gate.wait(ctx.signal);
  if (ctx.input?.event) return ctx.waitForEvent(ctx.input.event);
  return ctx.input;
}

@Workflow('a_wf', { retry: { attempts: 1 } })
class AWf {
  @Step()
  async go(ctx: RunContext<{ n?: number } | null>) {
    return body(ctx);
  }
}

@Workflow('a_other', { retry: { attempts: 1 } })
class AOther {
  @Step()
  async go(ctx: RunContext<{ n?: number } | null>) {
    return body(ctx);
  }
}

@Workflow('a_never', { reuse: 'never', retry: { attempts: 1 } })
class ANever {
  @Step()
  async go(ctx: RunContext<{ n?: number } | null>) {
    return body(ctx);
  }
}

@Workflow('a_debounce', { debounce: { period: '1h' }, retry: { attempts: 1 } })
class ADebounce {
  @Step()
  async go(ctx: RunContext<{ n?: number } | null>) {
    return body(ctx);
  }
}

@Workflow('a_timeout', { timeout: '1s', retry: { attempts: 1 } })
class ATimeout {
  @Step()
  async go(ctx: RunContext<{ n?: number } | null>) {
    return body(ctx);
  }
}

const ALL = [AWf, AOther, ANever, ADebounce, ATimeout];

/**
 * A fresh app (`options`), the `durable.key.handoff` count of `workflow` so far, and a run holding
 * `key` that a worker has picked up (forced to `status`), so a runAgain start waits behind it.
 */
async function pickedUpHolder(workflow: string, key: string, status: 'running' | 'waiting', options: Record<string, unknown>) {
  const t = await createApp({ workflows: ALL, options });
  const before = await counter('durable.key.handoff', { workflow });
  const h = await t.durable.start(workflow, {}, { key });
  await forceStatus(t.schema, h.runId, status);
  return { t, before, h };
}

/** The `key_handed_off` events of `key`, and checks the only one is the runAgain hand-off from `from` (ended `fromStatus`) to `to`. */
async function expectRunAgainHandoff(t: TestApp, key: string, from: string, fromStatus: string, to: string): Promise<void> {
  const ho = await t.durable.listActivity({ kinds: ['key_handed_off'], key });
  expect(ho).toHaveLength(1);
  expect(ho[0]).toMatchObject({ runId: to, details: { key, from, fromStatus, via: 'runAgain' } });
}

describe('watching keys', () => {
  beforeEach(() => {
    gate = new Gate();
    failing.clear();
  });

  describe('activity kinds', () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await createApp({ workflows: ALL, options: { worker: false } });
    });

    it('key_duplicate useExisting: on the holder, with inputChanged and the dropped input', async () => {
      const h = await t.durable.start('a_wf', { n: 1 }, { key: 'ue' });
      await t.durable.start('a_wf', { n: 1 }, { key: 'ue' });
      await t.durable.start('a_wf', { n: 2 }, { key: 'ue' });
      const ev = await t.durable.listActivity({ kinds: ['key_duplicate'], key: 'ue' });
      expect(ev).toHaveLength(2);
      // newest first
      expect(ev[0]).toMatchObject({
        kind: 'key_duplicate',
        runId: h.runId,
        at: expect.any(Date),
        details: { key: 'ue', workflow: 'a_wf', outcome: 'useExisting', inputChanged: true, input: { n: 2 } },
      });
      expect(ev[1].details).toMatchObject({ key: 'ue', workflow: 'a_wf', outcome: 'useExisting', inputChanged: false, input: { n: 1 } });
      expect(ev[0].details).not.toHaveProperty('runsAfter');
      expect(typeof ev[0].id).toBe('string');
    });

    it('key_duplicate useExisting: a null input is unchanged against a holder that took a null input as a debounce re-add', async () => {
      const h = await t.durable.start('a_debounce', null, { key: 'ue-null' });
      // in its debounce wait: the holder takes the re-add's (null) input
      expect(await t.durable.start('a_debounce', null, { key: 'ue-null' })).toEqual({ runId: h.runId, outcome: 'debounced' });
      await forceStatus(t.schema, h.runId, 'running');
      expect(await t.durable.start('a_debounce', null, { key: 'ue-null' })).toEqual({ runId: h.runId, outcome: 'useExisting' });
      const ev = await t.durable.listActivity({ kinds: ['key_duplicate'], key: 'ue-null' });
      expect(ev.map((e) => [e.details.outcome, e.details.inputChanged])).toEqual([
        ['useExisting', false],
        ['debounced', false],
      ]);
      expect((await t.durable.keyStats({ workflow: 'a_debounce' })).droppedInputs).toBe(0);
    });

    it('key_duplicate error, cancelExisting, sendEvent, debounced, and runAgain with and without runsAfter', async () => {
      const e = await t.durable.start('a_wf', { n: 1 }, { key: 'er' });
      await expect(t.durable.start('a_wf', { n: 2 }, { key: 'er', onDuplicate: 'error' })).rejects.toBeInstanceOf(KeyTakenError);

      const c = await t.durable.start('a_wf', { n: 1 }, { key: 'ce' });
      const c2 = await t.durable.start('a_wf', { n: 2 }, { key: 'ce', onDuplicate: 'cancelExisting' });

      const s = await t.durable.start('a_wf', { n: 1 }, { key: 'se' });
      await t.durable.start('a_wf', { n: 2 }, { key: 'se', onDuplicate: { sendEvent: 'upd' } });

      const d = await t.durable.start('a_debounce', { n: 1 }, { key: 'db' });
      await t.durable.start('a_debounce', { n: 2 }, { key: 'db' });

      // not picked up: the holder takes the input, nothing waits
      const r = await t.durable.start('a_wf', { n: 1 }, { key: 'ra0' });
      await t.durable.start('a_wf', { n: 2 }, { key: 'ra0', onDuplicate: 'runAgain' });
      // picked up: a run waits behind it
      const rw = await t.durable.start('a_wf', { n: 1 }, { key: 'ra1' });
      await forceStatus(t.schema, rw.runId, 'running');
      const waiter = await t.durable.start('a_wf', { n: 2 }, { key: 'ra1', onDuplicate: 'runAgain' });

      const get = async (key: string) => (await t.durable.listActivity({ kinds: ['key_duplicate'], key }))[0];
      expect(await get('er')).toMatchObject({
        runId: e.runId,
        details: { key: 'er', workflow: 'a_wf', outcome: 'error', inputChanged: true, input: { n: 2 } },
      });
      expect(await get('ce')).toMatchObject({ runId: c.runId, details: { key: 'ce', workflow: 'a_wf', outcome: 'cancelExisting', input: { n: 2 } } });
      expect(await get('se')).toMatchObject({ runId: s.runId, details: { key: 'se', workflow: 'a_wf', outcome: 'sendEvent', input: { n: 2 } } });
      expect(await get('db')).toMatchObject({ runId: d.runId, details: { key: 'db', workflow: 'a_debounce', outcome: 'debounced', input: { n: 2 } } });
      const ra0 = await get('ra0');
      expect(ra0).toMatchObject({ runId: r.runId, details: { key: 'ra0', workflow: 'a_wf', outcome: 'runAgain', input: { n: 2 } } });
      expect(ra0.details.runsAfter).toBeUndefined();
      expect(await get('ra1')).toMatchObject({
        runId: rw.runId,
        details: { key: 'ra1', workflow: 'a_wf', outcome: 'runAgain', runsAfter: rw.runId, input: { n: 2 } },
      });
      expect(waiter.runId).not.toBe(rw.runId);

      // the cancelExisting hand-off
      const ho = await t.durable.listActivity({ kinds: ['key_handed_off'], key: 'ce' });
      expect(ho).toHaveLength(1);
      expect(ho[0]).toMatchObject({ runId: c2.runId, details: { key: 'ce', workflow: 'a_wf' } });
    });

    it('key_handed_off when a start takes the key from a finished run; key_released with by; key_retaken on retry', async () => {
      const a = await t.durable.start('a_wf', {}, { key: 'ho' });
      await forceStatus(t.schema, a.runId, 'failed');
      const b = await t.durable.start('a_wf', {}, { key: 'ho' });
      const [handoff] = await t.durable.listActivity({ kinds: ['key_handed_off'], key: 'ho' });
      expect(handoff).toMatchObject({ runId: b.runId, details: { key: 'ho', workflow: 'a_wf' } });
      expect(JSON.stringify(handoff.details)).toContain(a.runId); // from whom

      await forceStatus(t.schema, b.runId, 'completed');
      await t.durable.releaseKey(b.runId, { by: 'ops@example.com' });
      const [released] = await t.durable.listActivity({ kinds: ['key_released'], key: 'ho' });
      expect(released).toMatchObject({ runId: b.runId, details: { key: 'ho', workflow: 'a_wf', by: 'ops@example.com' } });

      await t.durable.retry(a.runId);
      const [retaken] = await t.durable.listActivity({ kinds: ['key_retaken'], key: 'ho' });
      expect(retaken).toMatchObject({ runId: a.runId, details: { key: 'ho', workflow: 'a_wf' } });
      expect((await t.durable.listActivity({ key: 'ho' })).map((x) => x.kind)).toEqual(['key_retaken', 'key_released', 'key_handed_off']);
    });
  });

  describe('counters, and the runAgain hand-off with a worker', () => {
    it('is recorded as key_handed_off on the waiting run and counted by durable.key.handoff', async () => {
      const t = await createApp({ workflows: ALL });
      const before = await counter('durable.key.handoff', { workflow: 'a_wf' });
      const h = await t.durable.start('a_wf', { gate: true } as never, { key: 'rah' });
      await waitFor(async () => (await t.durable.getRun(h.runId))?.status === 'running');
      const w = await t.durable.start('a_wf', { n: 2 }, { key: 'rah', onDuplicate: 'runAgain' });
      gate.open();
      await t.durable.waitForRun(w.runId, { timeout: 10_000 });
      const ho = await t.durable.listActivity({ kinds: ['key_handed_off'], key: 'rah' });
      expect(ho).toHaveLength(1);
      expect(ho[0]).toMatchObject({ runId: w.runId, details: { key: 'rah', workflow: 'a_wf' } });
      expect(await counter('durable.key.handoff', { workflow: 'a_wf' })).toBe(before + 1);
    });

    it('counts the runAgain hand-off once when cancel() ends the holder', async () => {
      const { t, before, h } = await pickedUpHolder('a_wf', 'rac', 'running', { worker: false });
      const w = await t.durable.start('a_wf', { n: 2 }, { key: 'rac', onDuplicate: 'runAgain' });
      expect(w.outcome).toBe('runAgain');
      await t.durable.cancel(h.runId);
      await expectRunAgainHandoff(t, 'rac', h.runId, 'cancelled', w.runId);
      expect((await t.durable.getRun(w.runId))!).toMatchObject({ status: 'pending', holdsKey: true });
      expect(await counter('durable.key.handoff', { workflow: 'a_wf' })).toBe(before + 1);
      // no second count: cancelling it again, and cancelling the new holder (nothing waits behind it)
      await t.durable.cancel(h.runId);
      await t.durable.cancel(w.runId);
      expect(await counter('durable.key.handoff', { workflow: 'a_wf' })).toBe(before + 1);
    });

    it('counts it when the waiting run is added by a start that holds the holder locked while cancel() queues', async () => {
      const { t, before, h } = await pickedUpHolder('a_wf', 'racq', 'running', { worker: false });
      let cancelled: Promise<void> | undefined;
      // the start's transaction locks the holder and adds the waiting run; cancel()'s statement,
      // begun before that commits, waits for the lock and so cannot see the waiting run itself
      const w = await t.get(DurableConnection).dataSource.transaction(async (manager) => {
        const started = await t.durable.start('a_wf', { n: 2 }, { key: 'racq', onDuplicate: 'runAgain', manager });
        cancelled = t.durable.cancel(h.runId);
        await waitForLockWait([`${ident(t.schema)}.runs SET status = 'cancelled'`], "cancel()'s statement waits for the holder's lock");
        return started;
      });
      await cancelled;
      await expectRunAgainHandoff(t, 'racq', h.runId, 'cancelled', w.runId);
      expect(await counter('durable.key.handoff', { workflow: 'a_wf' })).toBe(before + 1);
    });

    it("counts it when the worker's finish queues on the holder's lock while a start adds the waiting run", async () => {
      const t = await createApp({ workflows: ALL });
      const before = await counter('durable.key.handoff', { workflow: 'a_wf' });
      const h = await t.durable.start('a_wf', { gate: true } as never, { key: 'rawq' });
      await waitFor(async () => (await t.durable.getRun(h.runId))?.status === 'running');
      // the start's transaction locks the holder and adds the waiting run; the worker's batched
      // finish, sent before that commits, waits for the lock and so cannot see the waiting run itself
      const w = await t.get(DurableConnection).dataSource.transaction(async (manager) => {
        const started = await t.durable.start('a_wf', { n: 2 }, { key: 'rawq', onDuplicate: 'runAgain', manager });
        gate.open();
        await waitForLockWait([`${ident(t.schema)}.runs r SET`], "the worker's finish waits for the holder's lock");
        return started;
      });
      expect(w.outcome).toBe('runAgain');
      await t.durable.waitForRun(w.runId, { timeout: 10_000 });
      await expectRunAgainHandoff(t, 'rawq', h.runId, 'completed', w.runId);
      await waitFor(async () => (await counter('durable.key.handoff', { workflow: 'a_wf' })) === before + 1, {
        message: 'the hand-off is counted',
      });
      expect(await counter('durable.key.handoff', { workflow: 'a_wf' })).toBe(before + 1);
    });

    it('counts the runAgain hand-off once when the timeout sweep fails the holder', async () => {
      // a worker node that does not run a_timeout: only its maintenance pass ends the (waiting) holder
      const { t, before, h } = await pickedUpHolder('a_timeout', 'rat', 'waiting', { worker: { workflows: ['a_other'] } });
      const w = await t.durable.start('a_timeout', { n: 2 }, { key: 'rat', onDuplicate: 'runAgain' });
      expect(w.outcome).toBe('runAgain');
      // the sweep fails h (its 1 s timeout), the key goes to w, and a later pass fails w too
      await waitFor(async () => (await t.durable.getRun(w.runId))?.status === 'failed', { timeout: 15_000 });
      expect((await t.durable.getRun(h.runId))!).toMatchObject({ status: 'failed', error: { code: 'timeout' }, holdsKey: false });
      await expectRunAgainHandoff(t, 'rat', h.runId, 'failed', w.runId);
      expect(await counter('durable.key.handoff', { workflow: 'a_timeout' })).toBe(before + 1);
    });

    it('a cancelExisting is counted like cancel(): durable.run.finished { status: cancelled }', async () => {
      const t = await createApp({ workflows: ALL, options: { worker: false } });
      const before = await counter('durable.run.finished', { workflow: 'a_never', status: 'cancelled' });
      await t.durable.start('a_never', {}, { key: 'cx' });
      // cancel() counts it (the harness sees the counter)
      const other = await t.durable.start('a_never', {}, { key: 'cx-plain' });
      await t.durable.cancel(other.runId);
      expect(await counter('durable.run.finished', { workflow: 'a_never', status: 'cancelled' })).toBe(before + 1);
      await t.durable.start('a_never', {}, { key: 'cx', onDuplicate: 'cancelExisting' });
      expect(await counter('durable.run.finished', { workflow: 'a_never', status: 'cancelled' })).toBe(before + 2);
    });

    it('counts the outcomes decided under the holder lock once they commit, and nothing of a start whose commit fails', async () => {
      const t = await createApp({ workflows: ALL, options: { worker: false } });
      const S = ident(t.schema);
      const dup = (workflow: string, outcome: string) => counter('durable.key.duplicate', { workflow, outcome });
      const figures = async () => ({
        cancel: await dup('a_other', 'cancelExisting'),
        runAgain: await dup('a_other', 'runAgain'),
        sendEvent: await dup('a_other', 'sendEvent'),
        debounced: await dup('a_debounce', 'debounced'),
        handoff: await counter('durable.key.handoff', { workflow: 'a_other' }),
        cancelled: await counter('durable.run.finished', { workflow: 'a_other', status: 'cancelled' }),
      });
      const before = await figures();
      const h = await t.durable.start('a_other', { n: 1 }, { key: 'lk' });
      expect((await t.durable.start('a_other', { n: 2 }, { key: 'lk', onDuplicate: 'runAgain' })).outcome).toBe('runAgain');
      expect((await t.durable.start('a_other', { n: 3 }, { key: 'lk', onDuplicate: { sendEvent: 'upd' } })).outcome).toBe('sendEvent');
      await t.durable.start('a_debounce', { n: 1 }, { key: 'lk' });
      expect((await t.durable.start('a_debounce', { n: 2 }, { key: 'lk' })).outcome).toBe('debounced');
      const c = await t.durable.start('a_other', { n: 4 }, { key: 'lk', onDuplicate: 'cancelExisting' });
      expect(c.outcome).toBe('cancelExisting');
      const counted = { cancel: 1, runAgain: 1, sendEvent: 1, debounced: 1, handoff: 1, cancelled: 1 };
      const after = await figures();
      expect(Object.fromEntries(Object.entries(after).map(([k, v]) => [k, v - before[k as keyof typeof before]]))).toEqual(counted);

      // a commit that fails (a deferred trigger on the activity row): the hand-off did not happen, nothing is counted
      await sql(`CREATE FUNCTION ${S}.refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused at commit'; END $$`);
      await sql(`CREATE CONSTRAINT TRIGGER refuse AFTER INSERT ON ${S}.activity DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
        WHEN (NEW.details->>'outcome' IN ('cancelExisting', 'debounced')) EXECUTE FUNCTION ${S}.refuse()`);
      await expect(t.durable.start('a_other', { n: 5 }, { key: 'lk', onDuplicate: 'cancelExisting' })).rejects.toThrow('refused at commit');
      await expect(t.durable.start('a_debounce', { n: 3 }, { key: 'lk' })).rejects.toThrow('refused at commit');
      expect((await t.durable.getRun(c.runId))!).toMatchObject({ status: 'pending', holdsKey: true, input: { n: 4 } });
      expect((await t.durable.getRun(h.runId))!.status).toBe('cancelled');
      expect(await figures()).toEqual(after);
    });

    it('counts duplicates by outcome and releases', async () => {
      const t = await createApp({ workflows: ALL, options: { worker: false } });
      const dup = await counter('durable.key.duplicate', { workflow: 'a_other', outcome: 'useExisting' });
      const err = await counter('durable.key.duplicate', { workflow: 'a_other', outcome: 'error' });
      const rel = await counter('durable.key.release', { workflow: 'a_other' });
      const a = await t.durable.start('a_other', {}, { key: 'tel' });
      await t.durable.start('a_other', {}, { key: 'tel' });
      await t.durable.start('a_other', {}, { key: 'tel', onDuplicate: 'error' }).catch(() => undefined);
      await forceStatus(t.schema, a.runId, 'completed');
      await t.durable.releaseKey(a.runId, { by: 'me' });
      expect(await counter('durable.key.duplicate', { workflow: 'a_other', outcome: 'useExisting' })).toBe(dup + 1);
      expect(await counter('durable.key.duplicate', { workflow: 'a_other', outcome: 'error' })).toBe(err + 1);
      expect(await counter('durable.key.release', { workflow: 'a_other' })).toBe(rel + 1);
    });
  });

  describe('listActivity filters', () => {
    it('by kinds, workflow (name or class), key, runId, since and limit; newest first', async () => {
      const t = await createApp({ workflows: ALL, options: { worker: false } });
      const a = await t.durable.start('a_wf', {}, { key: 'f1' });
      await t.durable.start('a_wf', {}, { key: 'f1' });
      const b = await t.durable.start('a_other', {}, { key: 'f1' });
      await t.durable.start('a_other', {}, { key: 'f1' });
      await t.durable.start('a_wf', { n: 1 }, { key: 'f2' });
      const f2 = (await t.durable.listRuns({ key: 'f2' }))[0];
      await t.durable.start('a_wf', { n: 2 }, { key: 'f2' });
      await forceStatus(t.schema, a.runId, 'completed');
      await t.durable.releaseKey(a.runId, { by: 'x' });

      const all = await t.durable.listActivity();
      expect(all).toHaveLength(4);
      const ids = all.map((e) => Number(e.id));
      expect([...ids].sort((x, y) => y - x)).toEqual(ids); // newest first

      expect((await t.durable.listActivity({ kinds: ['key_released'] })).map((e) => e.runId)).toEqual([a.runId]);
      expect(await t.durable.listActivity({ kinds: ['key_released', 'key_duplicate'] })).toHaveLength(4);
      expect(await t.durable.listActivity({ kinds: ['key_retaken'] })).toEqual([]);
      expect(await t.durable.listActivity({ workflow: 'a_other' })).toHaveLength(1);
      expect(await t.durable.listActivity({ workflow: AOther })).toHaveLength(1);
      expect(await t.durable.listActivity({ workflow: 'a_wf' })).toHaveLength(3);
      expect(await t.durable.listActivity({ key: 'f1' })).toHaveLength(3);
      expect(await t.durable.listActivity({ key: 'f1', workflow: 'a_wf' })).toHaveLength(2);
      expect((await t.durable.listActivity({ runId: b.runId })).map((e) => e.details.workflow)).toEqual(['a_other']);
      expect((await t.durable.listActivity({ runId: f2.id })).map((e) => e.details.key)).toEqual(['f2']);
      expect(await t.durable.listActivity({ limit: 2 })).toHaveLength(2);

      // since: backdate two events
      await sql(`UPDATE ${ident(t.schema)}.activity SET at = now() - interval '2 hours' WHERE key = 'f1'`);
      const recent = await t.durable.listActivity({ since: new Date(Date.now() - 3_600_000) });
      expect(recent.map((e) => e.details.key)).toEqual(['f2']);
      expect(await t.durable.listActivity({ since: new Date(Date.now() - 3 * 3_600_000) })).toHaveLength(4);
    });
  });

  describe('listActivity with a runId that is no run id', () => {
    it('resolves [] (or a DurableError), never a raw database error', async () => {
      const t = await createApp({ workflows: ALL, options: { worker: false } });
      await t.durable.start('a_wf', {}, { key: 'u' });
      await t.durable.start('a_wf', {}, { key: 'u' });
      const bad = await t.durable.listActivity({ runId: 'not-a-uuid' }).catch((e: unknown) => e);
      if (bad instanceof Error) expect(bad).toBeInstanceOf(DurableError);
      else expect(bad).toEqual([]);
    });
  });

  describe('runs and keys', () => {
    it('RunInfo.readds counts every start that found the run holding its key', async () => {
      const t = await createApp({ workflows: ALL, options: { worker: false } });
      const h = await t.durable.start('a_wf', { n: 0 }, { key: 'rd' });
      expect((await t.durable.getRun(h.runId))!.readds).toBe(0);
      await t.durable.start('a_wf', { n: 1 }, { key: 'rd' });
      await t.durable.start('a_wf', { n: 2 }, { key: 'rd' });
      await t.durable.start('a_wf', { n: 3 }, { key: 'rd', onDuplicate: 'error' }).catch(() => undefined);
      await t.durable.start('a_wf', { n: 4 }, { key: 'rd', onDuplicate: { sendEvent: 'x' } });
      expect((await t.durable.getRun(h.runId))!.readds).toBe(4);
      expect((await t.durable.listRuns({ key: 'rd' }))[0].readds).toBe(4);
      // cancelExisting also found it holding its key
      const c = await t.durable.start('a_wf', {}, { key: 'rd-ce' });
      await t.durable.start('a_wf', {}, { key: 'rd-ce', onDuplicate: 'cancelExisting' });
      expect((await t.durable.getRun(c.runId))!.readds).toBe(1);
    });

    it('RunInfo.readds keeps counting the re-adds whose activity records were pruned', async () => {
      const t = await createApp({ workflows: ALL, options: { worker: false, retention: { activity: '1h' } } });
      const h = await t.durable.start('a_wf', {}, { key: 'rd-pruned' });
      for (let i = 0; i < 3; i++) await t.durable.start('a_wf', { i }, { key: 'rd-pruned' });
      const [oldest] = (await t.durable.listActivity({ runId: h.runId })).slice(-1);
      await sql(`UPDATE ${ident(t.schema)}.activity SET at = now() - interval '2 hours' WHERE id <> $1 AND run_id = $2`, [oldest.id, h.runId]);
      expect((await t.durable.prune()).activity).toBe(2);
      expect(await t.durable.listActivity({ runId: h.runId })).toHaveLength(1);
      expect((await t.durable.getRun(h.runId))!.readds).toBe(3);
      expect((await t.durable.listRuns({ key: 'rd-pruned' }))[0].readds).toBe(3);
      await t.durable.start('a_wf', {}, { key: 'rd-pruned' });
      expect((await t.durable.getRun(h.runId))!.readds).toBe(4);
    });

    it("activityCommit: 'asynchronous' records every duplicate, and never relaxes a caller's transaction", async () => {
      // one pooled connection: the setting checked below is the one the duplicates committed on
      const ds = new DataSource({ type: 'postgres', url: databaseUrl(), extra: { max: 1 } });
      await ds.initialize();
      // the test servers run with synchronous_commit off: the session's own value is the one to keep
      await ds.query('SET synchronous_commit = on');
      const t = await createApp({ workflows: ALL, options: { worker: false, dataSource: ds, activityCommit: 'asynchronous' } });
      const h = await t.durable.start('a_wf', { n: 0 }, { key: 'relaxed' });
      await Promise.all(Array.from({ length: 20 }, (_, i) => t.durable.start('a_wf', { n: i + 1 }, { key: 'relaxed' })));
      await t.durable.start('a_wf', {}, { key: 'relaxed', onDuplicate: 'error' }).catch((e: unknown) => expect(e).toBeInstanceOf(KeyTakenError));
      expect((await t.durable.getRun(h.runId))!.readds).toBe(21);
      const outcomes = (await t.durable.listActivity({ runId: h.runId })).map((e) => e.details.outcome);
      expect(outcomes.filter((o) => o === 'useExisting')).toHaveLength(20);
      expect(outcomes.filter((o) => o === 'error')).toHaveLength(1);
      // the pooled connection is back to its session's setting once each duplicate committed
      expect(await ds.query(`SELECT current_setting('synchronous_commit') AS v`)).toEqual([{ v: 'on' }]);
      // inside a caller's transaction the duplicate commits as the caller does
      const inTx = await ds.transaction(async (manager) => {
        const r = await t.durable.start('a_wf', {}, { key: 'relaxed', manager });
        const [{ v }] = await manager.query(`SELECT current_setting('synchronous_commit') AS v`);
        return { r, v };
      });
      expect(inTx).toEqual({ r: { runId: h.runId, outcome: 'useExisting' }, v: 'on' });
      expect((await t.durable.getRun(h.runId))!.readds).toBe(22);
      await t.close();
      await ds.destroy();
    });

    it('newest first past id 9: ids order as numbers, not as the text they are returned as', async () => {
      const t = await createApp({ workflows: ALL, options: { worker: false } });
      for (let i = 0; i < 12; i++) await t.durable.start('a_wf', { i }, { key: 'many' });
      const events = await t.durable.listActivity({ key: 'many', workflow: 'a_wf' });
      expect(events.map((e) => e.details.input)).toEqual(Array.from({ length: 11 }, (_, i) => ({ i: 11 - i })));
      const ids = events.map((e) => BigInt(e.id));
      expect([...ids].sort((x, y) => (x < y ? 1 : x > y ? -1 : 0))).toEqual(ids);
      expect((await t.durable.listActivity({ key: 'many', limit: 3 })).map((e) => e.id)).toEqual(events.slice(0, 3).map((e) => e.id));
      // the same key in another workflow, later: without a workflow the two are merged newest first
      for (let j = 0; j < 4; j++) await t.durable.start('a_other', { o: j }, { key: 'many' });
      const merged = await t.durable.listActivity({ key: 'many', limit: 5 });
      expect(merged.map((e) => e.details.input)).toEqual([{ o: 3 }, { o: 2 }, { o: 1 }, { i: 11 }, { i: 10 }]);
      expect((await t.durable.listActivity({ key: 'many', workflow: 'a_other' })).map((e) => e.details.input)).toEqual([{ o: 3 }, { o: 2 }, { o: 1 }]);
    });

    it('listRuns({ key }) returns every run started with the key; the holder has holdsKey: true', async () => {
      const t = await createApp({ workflows: ALL, options: { worker: false } });
      const a = await t.durable.start('a_wf', {}, { key: 'article:42' });
      await forceStatus(t.schema, a.runId, 'failed');
      const b = await t.durable.start('a_wf', {}, { key: 'article:42' });
      await forceStatus(t.schema, b.runId, 'completed');
      const c = await t.durable.start('a_wf', {}, { key: 'article:42' });
      await t.durable.start('a_wf', {}, { key: 'article:43' });
      const runs = await t.durable.listRuns({ key: 'article:42', workflow: 'a_wf' });
      expect(runs.map((r) => r.id).sort()).toEqual([a.runId, b.runId, c.runId].sort());
      expect(runs.filter((r) => r.holdsKey).map((r) => r.id)).toEqual([c.runId]);
      expect(runs.every((r) => r.key === 'article:42')).toBe(true);

      // without a workflow: the key's runs of every workflow, newest first, filtered and paged
      const other = await t.durable.start('a_other', {}, { key: 'article:42' });
      await t.durable.start('a_other', {}, { key: 'article:7' });
      const newestFirst = (...ids: string[]) => ids.sort().reverse(); // UUIDv7 ids: id order is start order, to the millisecond
      const all = newestFirst(other.runId, c.runId, b.runId, a.runId);
      expect((await t.durable.listRuns({ key: 'article:42' })).map((r) => r.id)).toEqual(all);
      expect((await t.durable.listRuns({ key: 'article:42', status: 'pending' })).map((r) => r.id)).toEqual(newestFirst(other.runId, c.runId));
      const page = await t.durable.listRuns({ key: 'article:42', limit: 2 });
      expect(page.map((r) => r.id)).toEqual(all.slice(0, 2));
      expect((await t.durable.listRuns({ key: 'article:42', cursor: page[1].id })).map((r) => r.id)).toEqual(all.slice(2));
      expect(await t.durable.listRuns({ key: 'article:9' })).toEqual([]);
    });

    it('listKeys({ workflow }): holder, runs per key, readdsLastDay, search, cursor', async () => {
      const t = await createApp({ workflows: ALL, options: { worker: false } });
      const a1 = await t.durable.start('a_wf', {}, { key: 'article:1' });
      await forceStatus(t.schema, a1.runId, 'completed');
      const a1b = await t.durable.start('a_wf', {}, { key: 'article:1' }); // hand-off: 2 runs
      await t.durable.start('a_wf', {}, { key: 'article:1' });
      await t.durable.start('a_wf', {}, { key: 'article:1' });
      const a2 = await t.durable.start('a_wf', {}, { key: 'article:2' });
      await t.durable.start('a_wf', {}, { key: 'article:2' });
      // a re-add older than a day does not count
      await sql(`UPDATE ${ident(t.schema)}.activity SET at = now() - interval '2 days' WHERE id = (
        SELECT max(id) FROM ${ident(t.schema)}.activity WHERE key = 'article:2' AND kind = 'key_duplicate')`);
      const s = await t.durable.start('a_wf', {}, { key: 'sync:7' });
      await forceStatus(t.schema, s.runId, 'completed');
      await t.durable.releaseKey(s.runId, { by: 'ops' });
      await t.durable.start('a_other', {}, { key: 'article:1' }); // another workflow

      const keys = await t.durable.listKeys({ workflow: 'a_wf' });
      expect(keys).toEqual([
        { workflow: 'a_wf', key: 'article:1', holderId: a1b.runId, holderStatus: 'pending', runs: 2, readdsLastDay: 2, cursor: 'article:1' },
        { workflow: 'a_wf', key: 'article:2', holderId: a2.runId, holderStatus: 'pending', runs: 1, readdsLastDay: 0, cursor: 'article:2' },
        { workflow: 'a_wf', key: 'sync:7', holderId: null, holderStatus: null, runs: 1, readdsLastDay: 0, cursor: 'sync:7' },
      ]);
      expect((await t.durable.listKeys({ workflow: AWf, search: 'article' })).map((k) => k.key)).toEqual(['article:1', 'article:2']);
      expect((await t.durable.listKeys({ workflow: 'a_wf', search: 'sync' })).map((k) => k.key)).toEqual(['sync:7']);
      const page1 = await t.durable.listKeys({ workflow: 'a_wf', limit: 2 });
      expect(page1.map((k) => k.key)).toEqual(['article:1', 'article:2']);
      const page2 = await t.durable.listKeys({ workflow: 'a_wf', limit: 2, cursor: page1[1].key });
      expect(page2.map((k) => k.key)).toEqual(['sync:7']);
      expect(await t.durable.listKeys({ workflow: 'a_other' })).toEqual([expect.objectContaining({ key: 'article:1', runs: 1, readdsLastDay: 0 })]);
    });

    it('keyStats({ workflow }): every figure', async () => {
      const t = await createApp({ workflows: ALL, options: { worker: false } });
      const empty = await t.durable.keyStats({ workflow: 'a_wf' });
      expect(empty).toEqual({ keysHeld: 0, readdsByOutcome: {}, droppedInputs: 0, handoffs: 0, readdsOverTime: [], topKeys: [] });

      const k1 = await t.durable.start('a_wf', { n: 1 }, { key: 'k1' });
      await t.durable.start('a_wf', { n: 1 }, { key: 'k1' }); // same input: not dropped-changed
      await t.durable.start('a_wf', { n: 2 }, { key: 'k1' }); // dropped input
      await t.durable.start('a_wf', { n: 3 }, { key: 'k1' }); // dropped input
      await t.durable.start('a_wf', { n: 4 }, { key: 'k1', onDuplicate: 'error' }).catch(() => undefined);
      const k2 = await t.durable.start('a_wf', { n: 1 }, { key: 'k2' });
      await t.durable.start('a_wf', { n: 2 }, { key: 'k2', onDuplicate: 'cancelExisting' }); // a hand-off too
      const k3 = await t.durable.start('a_wf', {}, { key: 'k3' });
      await forceStatus(t.schema, k3.runId, 'completed');
      await t.durable.start('a_wf', {}, { key: 'k3' }); // hand-off from a finished run
      await t.durable.start('a_other', { n: 9 }, { key: 'k1' });
      await t.durable.start('a_other', { n: 8 }, { key: 'k1' }); // another workflow: not counted

      const stats = await t.durable.keyStats({ workflow: 'a_wf' });
      expect(stats.keysHeld).toBe(3);
      expect(stats.readdsByOutcome).toEqual({ useExisting: 3, error: 1, cancelExisting: 1 });
      expect(stats.droppedInputs).toBe(2);
      expect(stats.handoffs).toBe(2);
      expect(stats.readdsOverTime.length).toBeGreaterThanOrEqual(1);
      for (const b of stats.readdsOverTime) {
        expect(b.bucket).toBeInstanceOf(Date);
        expect(Date.now() - b.bucket.getTime()).toBeLessThan(2 * 3_600_000);
      }
      expect(stats.readdsOverTime.reduce((n, b) => n + b.count, 0)).toBe(5);
      expect(stats.topKeys).toEqual([
        { key: 'k1', readds: 4 },
        { key: 'k2', readds: 1 },
      ]);
      expect(k1.runId && k2.runId).toBeTruthy();
      const other = await t.durable.keyStats({ workflow: AOther });
      expect(other).toMatchObject({ keysHeld: 1, readdsByOutcome: { useExisting: 1 }, droppedInputs: 1, handoffs: 0 });
    });
  });

  describe('retention', () => {
    it('activity older than retention.activity is pruned by prune()', async () => {
      const t = await createApp({ workflows: ALL, options: { worker: false, retention: { activity: '1h' } } });
      await t.durable.start('a_wf', {}, { key: 'old' });
      await t.durable.start('a_wf', {}, { key: 'old' });
      await t.durable.start('a_wf', {}, { key: 'new' });
      await t.durable.start('a_wf', {}, { key: 'new' });
      await sql(`UPDATE ${ident(t.schema)}.activity SET at = now() - interval '2 hours' WHERE key = 'old'`);
      const res = await t.durable.prune();
      expect(res.activity).toBe(1);
      expect((await t.durable.listActivity()).map((e) => e.details.key)).toEqual(['new']);
      expect((await t.durable.keyStats({ workflow: 'a_wf' })).readdsByOutcome).toEqual({ useExisting: 1 });
    });

    it('the default keeps activity for a week', async () => {
      const t = await createApp({ workflows: ALL, options: { worker: false } });
      await t.durable.start('a_wf', {}, { key: 'wk' });
      for (let i = 0; i < 3; i++) await t.durable.start('a_wf', {}, { key: 'wk' });
      const ids = (await t.durable.listActivity()).map((e) => e.id);
      await sql(`UPDATE ${ident(t.schema)}.activity SET at = now() - interval '6 days' WHERE id = $1`, [ids[0]]);
      await sql(`UPDATE ${ident(t.schema)}.activity SET at = now() - interval '8 days' WHERE id = $1`, [ids[1]]);
      expect((await t.durable.prune()).activity).toBe(1);
      expect((await t.durable.listActivity()).map((e) => e.id).sort()).toEqual([ids[0], ids[2]].sort());
    });

    it('a worker node prunes activity past retention.activity on its own', async () => {
      const schema = freshSchema();
      const t = await createApp({ workflows: ALL, schema, options: { retention: { activity: '1s' } } });
      await t.durable.start('a_never', {}, { key: 'auto' });
      await t.durable.start('a_never', {}, { key: 'auto' });
      expect(await t.durable.listActivity({ key: 'auto' })).toHaveLength(1);
      await waitFor(async () => (await t.durable.listActivity({ key: 'auto' })).length === 0, { timeout: 15_000 });
    });
  });
});
