/**
 * What a duplicate returns (docs/keys.md, "onDuplicate" and "When the newer input
 * Arrive While a Run Is Going"): useExisting, error, cancelExisting, runAgain and { sendEvent },
 * against going holders and finished holders that reuse keeps.
 */
import { DurableValidationError, KeyTakenError, RunContext, RunStatus, Step, Workflow } from '../../src';
import { countRuns, createApp, freshSchema, Gate, ident, sql, TestApp, waitFor } from '../support';
import { forceStatus, holdersOf, expectKeyTaken } from '../support/keys';

type In = { gate?: string; fail?: boolean; event?: string; n?: number; prepGate?: string; prepFail?: boolean } | null;

const gates = new Map<string, Gate>();
const gateOf = (tag: string) => {
  let g = gates.get(tag);
  if (!g) gates.set(tag, (g = new Gate()));
  return g;
};
/** runId → what happened to it, in order */
const log: Record<string, string[]> = {};
const note = (id: string, what: string) => (log[id] ??= []).push(what);
/** runId → inputs its main step ran with */
const ranWith: Record<string, unknown[]> = {};

async function main(ctx: RunContext<In>) {
  const i = ctx.input ?? {};
  (ranWith[ctx.runId] ??= []).push(ctx.input);
  note(ctx.runId, 'main');
  if (i.gate) {
    await gateOf(i.gate).wait(ctx.signal);
    if (ctx.signal.aborted) {
      note(ctx.runId, 'aborted');
      throw ctx.signal.reason ?? new Error('aborted');
    }
  }
  if (i.fail) throw new Error('boom');
  if (i.event) {
    const payload = await ctx.waitForEvent(i.event);
    note(ctx.runId, `event:${JSON.stringify(payload)}`);
    return { event: payload };
  }
  return { input: ctx.input };
}

/** A workflow: a first step with a compensation, the main step, and a last step. */
function define(name: string, options: Record<string, unknown>) {
  @Workflow(name, { retry: { attempts: 1 }, ...(options as object) })
  class W {
    @Step({ compensate: 'undo' })
    async prep(ctx: RunContext<In>) {
      note(ctx.runId, 'prep');
      if (ctx.input?.prepGate) {
        note(ctx.runId, 'main'); // "reached its blocking step"
        await gateOf(ctx.input.prepGate).wait(ctx.signal);
      }
      if (ctx.input?.prepFail) throw new Error('prep failed'); // nothing to compensate: ends 'failed'
    }

    async undo(ctx: RunContext<In>) {
      note(ctx.runId, 'undo');
    }

    @Step()
    async work(ctx: RunContext<In>) {
      return main(ctx);
    }

    @Step()
    async last(ctx: RunContext<In>) {
      note(ctx.runId, 'last');
      return { last: ctx.input, event: ctx.get('event') ?? null };
    }
  }
  Object.defineProperty(W, 'name', { value: `W_${name}` });
  return W;
}

// `main`'s return is the `work` step's result; `last` returns the input, so the run's result shows it.
const DClose = define('d_close', {});
const DFailure = define('d_failure', { reuse: 'afterFailure' });
const DNever = define('d_never', { reuse: 'never' });
const DError = define('d_error', { onDuplicate: 'error' });
const DAgain = define('d_again', { onDuplicate: 'runAgain' });
const DAgainFailure = define('d_again_failure', { onDuplicate: 'runAgain', reuse: 'afterFailure' });
const DAgainTimeout = define('d_again_timeout', { onDuplicate: 'runAgain', timeout: '1s' });
const DSend = define('d_send', { onDuplicate: { sendEvent: 'upd' }, reuse: 'afterFailure' });
@Workflow('d_parent', { retry: { attempts: 1 } })
class DParent {
  @Step()
  async call(ctx: RunContext<In>) {
    return ctx.callWorkflow('d_close', { gate: 'child' });
  }
}

@Workflow('d_nap', { onDuplicate: { sendEvent: 'upd' }, retry: { attempts: 1 } })
class DNap {
  @Step()
  async nap(ctx: RunContext<In>) {
    await ctx.sleep(600);
  }

  @Step()
  async listen(ctx: RunContext<In>) {
    const payload = await ctx.waitForEvent('upd');
    note(ctx.runId, `event:${JSON.stringify(payload)}`);
    return payload;
  }
}

const ALL = [DClose, DFailure, DNever, DError, DAgain, DAgainFailure, DAgainTimeout, DSend, DParent, DNap];

async function statusIs(t: TestApp, id: string, status: RunStatus) {
  return waitFor(async () => ((await t.durable.getRun(id))?.status === status ? true : null), {
    message: `run ${id} to be ${status}`,
  });
}

describe('what a duplicate returns', () => {
  beforeEach(() => gates.clear());

  describe('useExisting and error', () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await createApp({ workflows: ALL, options: { worker: false } });
    });

    it('a free key creates under every onDuplicate mode', async () => {
      for (const mode of ['useExisting', 'error', 'cancelExisting', 'runAgain', { sendEvent: 'upd' }] as const) {
        const key = `free:${JSON.stringify(mode)}`;
        const r = await t.durable.start('d_close', {}, { key, onDuplicate: mode });
        expect(r.outcome).toBe('created');
        expect(await holdersOf(t.schema, 'd_close', key)).toEqual([r.runId]);
      }
    });

    it('useExisting (default) returns the holder; error per call → KeyTakenError(holderId); nothing created', async () => {
      const a = await t.durable.start('d_close', { n: 1 }, { key: 'ue' });
      expect(await t.durable.start('d_close', { n: 2 }, { key: 'ue' })).toEqual({ runId: a.runId, outcome: 'useExisting' });
      await expectKeyTaken(t.durable.start('d_close', { n: 3 }, { key: 'ue', onDuplicate: 'error' }), a.runId);
      expect(await countRuns(t.schema, 'key = $1', ['ue'])).toBe(1);
      expect((await t.durable.getRun(a.runId))!.input).toEqual({ n: 1 }); // the duplicate's input is dropped
    });

    it('onDuplicate on the workflow is the default, and a call overrides it', async () => {
      const a = await t.durable.start('d_error', {}, { key: 'we' });
      await expectKeyTaken(t.durable.start('d_error', {}, { key: 'we' }), a.runId);
      expect(await t.durable.start('d_error', {}, { key: 'we', onDuplicate: 'useExisting' })).toEqual({
        runId: a.runId,
        outcome: 'useExisting',
      });
      expect(await countRuns(t.schema, 'key = $1', ['we'])).toBe(1);
    });

    it('startMany: a taken key under error is an { error } item, the others are created', async () => {
      const a = await t.durable.start('d_error', {}, { key: 'sm-1' });
      const res = await t.durable.startMany('d_error', [
        { input: {}, key: 'sm-1' },
        { input: {}, key: 'sm-2' },
      ]);
      expect('error' in res[0] && res[0].error).toBeInstanceOf(KeyTakenError);
      expect((res[0] as { error: KeyTakenError }).error.holderId).toBe(a.runId);
      expect(res[1]).toEqual({ runId: expect.any(String), outcome: 'created' });
    });
  });

  describe('definition and batches', () => {
    it("reuse: 'never' with onDuplicate: 'runAgain' throws when the class is defined (types bypassed)", () => {
      expect(() => {
        @Workflow('d_bad', { reuse: 'never', onDuplicate: 'runAgain' } as never)
        class Bad {
          @Step()
          async go() {
            return 1;
          }
        }
        return Bad;
      }).toThrow(/runAgain|never/);
    });

    it('startMany: two items with one key in one batch make one run; the second gets it back', async () => {
      const t = await createApp({ workflows: ALL, options: { worker: false } });
      const res = await t.durable.startMany('d_close', [
        { input: { n: 1 }, key: 'same' },
        { input: { n: 2 }, key: 'same' },
        { input: { n: 3 }, key: 'other' },
      ]);
      expect(res[0]).toEqual({ runId: expect.any(String), outcome: 'created' });
      expect(res[1]).toEqual({ runId: (res[0] as { runId: string }).runId, outcome: 'useExisting' });
      expect(res[2]).toEqual({ runId: expect.any(String), outcome: 'created' });
      expect(await countRuns(t.schema, 'key = $1', ['same'])).toBe(1);
    });
  });

  describe('a finished holder that reuse keeps', () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await createApp({ workflows: ALL, options: { worker: false } });
    });

    const CASES: [string, string, RunStatus][] = [
      ['d_never', 'never', 'completed'],
      ['d_never', 'never', 'failed'],
      ['d_never', 'never', 'cancelled'],
      ['d_failure', 'afterFailure', 'completed'],
    ];

    it.each(CASES)('%s (reuse %s), holder %s: cancelExisting/runAgain/sendEvent/error → KeyTakenError, useExisting → holder', async (wf, _reuse, status) => {
      const key = `kept:${wf}:${status}`;
      const a = await t.durable.start(wf, { n: 1 }, { key });
      await forceStatus(t.schema, a.runId, status);
      const modes = ['cancelExisting', 'runAgain', { sendEvent: 'upd' }, 'error'] as const;
      for (const onDuplicate of modes) {
        if (wf === 'd_never' && onDuplicate === 'runAgain') {
          // refused before the holder is looked at: a waiting run could never take a 'never' key
          await expect(t.durable.start(wf, { n: 2 }, { key, onDuplicate })).rejects.toBeInstanceOf(DurableValidationError);
          continue;
        }
        await expectKeyTaken(t.durable.start(wf, { n: 2 }, { key, onDuplicate }), a.runId);
      }
      expect(await t.durable.start(wf, { n: 3 }, { key, onDuplicate: 'useExisting' })).toEqual({
        runId: a.runId,
        outcome: 'useExisting',
      });
      const run = (await t.durable.getRun(a.runId))!;
      expect(run).toMatchObject({ status, holdsKey: true, input: { n: 1 } });
      expect(await countRuns(t.schema, 'key = $1', [key])).toBe(1);
      // nothing was sent to it
      const [{ n }] = await sql(`SELECT count(*)::int AS n FROM ${ident(t.schema)}.events WHERE run_id = $1`, [a.runId]).catch(() => [{ n: 0 }]);
      expect(n).toBe(0);
    });

    it('the workflow default runAgain against a completed holder kept by afterFailure → KeyTakenError', async () => {
      const a = await t.durable.start('d_again_failure', {}, { key: 'kept-ra' });
      await forceStatus(t.schema, a.runId, 'completed');
      await expectKeyTaken(t.durable.start('d_again_failure', {}, { key: 'kept-ra' }), a.runId);
      expect(await countRuns(t.schema, 'key = $1', ['kept-ra'])).toBe(1);
    });
  });

  describe('cancelExisting', () => {
    it('cancels a running holder and hands its key over in one step; its step is stopped, no later step or compensation runs', async () => {
      const t = await createApp({ workflows: ALL });
      const a = await t.durable.start('d_close', { gate: 'ce1', n: 1 }, { key: 'ce' });
      await waitFor(() => log[a.runId]?.includes('main'));
      const b = await t.durable.start('d_close', { n: 2 }, { key: 'ce', onDuplicate: 'cancelExisting' });
      expect(b.outcome).toBe('cancelExisting');
      expect(b.runId).not.toBe(a.runId);
      // one step: as soon as the start returns, the holder is cancelled and the new run holds the key
      const old = (await t.durable.getRun(a.runId))!;
      expect(old.status).toBe('cancelled');
      expect(old.holdsKey).toBe(false);
      expect(JSON.stringify(old.error)).toContain(b.runId); // the error names its replacement
      expect(await holdersOf(t.schema, 'd_close', 'ce')).toEqual([b.runId]);
      const done = await t.durable.waitForRun(b.runId, { timeout: 10_000 });
      expect(done.status).toBe('completed');
      expect(done.result).toEqual({ last: { n: 2 }, event: null });
      // the running step saw the abort at the next heartbeat; no later step, no compensation
      await waitFor(() => log[a.runId]?.includes('aborted'));
      gateOf('ce1').open();
      expect(log[a.runId]).not.toContain('last');
      expect(log[a.runId]).not.toContain('undo');
      expect((await t.durable.getRun(a.runId))!.status).toBe('cancelled');
    });

    it("is the same cancel as cancel(): the holder's unfinished children are cancelled with it", async () => {
      const t = await createApp({ workflows: ALL });
      const p = await t.durable.start('d_parent', {}, { key: 'pk' });
      const child = await waitFor(async () => (await t.durable.listRuns({ workflow: 'd_close', status: 'running' }))[0]);
      // the children are written before the parent's suspension commits: wait for both
      await waitFor(async () => (await t.durable.getRun(p.runId))!.status === 'waiting');
      const r = await t.durable.start('d_parent', {}, { key: 'pk', onDuplicate: 'cancelExisting' });
      expect(r.outcome).toBe('cancelExisting');
      expect((await t.durable.getRun(p.runId))!.status).toBe('cancelled');
      expect((await t.durable.waitForRun(child.id, { timeout: 10_000 })).status).toBe('cancelled');
      gateOf('child').open();
      await t.durable.cancel(r.runId);
    });

    it.each(['d_close', 'd_failure', 'd_never'])('works on a going holder under any reuse (%s), never included', async (wf) => {
      const t = await createApp({ workflows: ALL, options: { worker: false } });
      const a = await t.durable.start(wf, { n: 1 }, { key: 'any' });
      const b = await t.durable.start(wf, { n: 2 }, { key: 'any', onDuplicate: 'cancelExisting' });
      expect(b.outcome).toBe('cancelExisting');
      expect((await t.durable.getRun(a.runId))!).toMatchObject({ status: 'cancelled', holdsKey: false });
      expect((await t.durable.getRun(b.runId))!).toMatchObject({ status: 'pending', holdsKey: true, input: { n: 2 } });
      // a waiting holder too
      await forceStatus(t.schema, b.runId, 'waiting');
      const c = await t.durable.start(wf, { n: 3 }, { key: 'any', onDuplicate: 'cancelExisting' });
      expect(c.outcome).toBe('cancelExisting');
      expect((await t.durable.getRun(b.runId))!).toMatchObject({ status: 'cancelled', holdsKey: false });
      expect(await holdersOf(t.schema, wf, 'any')).toEqual([c.runId]);
      const cancelled = (await t.durable.getRun(b.runId))!;
      expect(JSON.stringify(cancelled.error)).toContain(c.runId);
    });

    it('a compensating holder cannot be cancelled: KeyTakenError(holderId), holder untouched', async () => {
      const t = await createApp({ workflows: ALL, options: { worker: false } });
      const a = await t.durable.start('d_close', {}, { key: 'comp' });
      await forceStatus(t.schema, a.runId, 'compensating');
      await expectKeyTaken(t.durable.start('d_close', {}, { key: 'comp', onDuplicate: 'cancelExisting' }), a.runId);
      expect((await t.durable.getRun(a.runId))!).toMatchObject({ status: 'compensating', holdsKey: true });
      expect(await countRuns(t.schema)).toBe(1);
    });

    it('a finished holder that reuse frees is simply handed over (created)', async () => {
      const t = await createApp({ workflows: ALL, options: { worker: false } });
      const a = await t.durable.start('d_close', {}, { key: 'fin' });
      await forceStatus(t.schema, a.runId, 'completed');
      const b = await t.durable.start('d_close', {}, { key: 'fin', onDuplicate: 'cancelExisting' });
      expect(b.outcome).toBe('created');
      expect((await t.durable.getRun(a.runId))!).toMatchObject({ status: 'completed', holdsKey: false });
    });
  });

  describe('runAgain', () => {
    it('one run waits behind a running holder with the newest input, then takes the key when the holder completes', async () => {
      const t = await createApp({ workflows: ALL });
      const h = await t.durable.start('d_again', { gate: 'ra1', n: 1 }, { key: 'acct:7' });
      await waitFor(() => log[h.runId]?.includes('main'));
      const w2 = await t.durable.start('d_again', { n: 2 }, { key: 'acct:7' });
      expect(w2.outcome).toBe('runAgain');
      expect(w2.runId).not.toBe(h.runId);
      const w3 = await t.durable.start('d_again', { n: 3 }, { key: 'acct:7' });
      expect(w3).toEqual({ runId: w2.runId, outcome: 'runAgain' });
      const waiting = (await t.durable.getRun(w2.runId))!;
      expect(waiting).toMatchObject({ status: 'waiting', holdsKey: false, runsAfterId: h.runId, input: { n: 3 }, key: 'acct:7' });
      expect(await countRuns(t.schema, 'key = $1', ['acct:7'])).toBe(2); // the holder and one waiting run
      expect(await holdersOf(t.schema, 'd_again', 'acct:7')).toEqual([h.runId]);
      expect(log[w2.runId]).toBeUndefined();
      gateOf('ra1').open();
      expect((await t.durable.waitForRun(h.runId, { timeout: 10_000 })).status).toBe('completed');
      const done = await t.durable.waitForRun(w2.runId, { timeout: 10_000 });
      expect(done.status).toBe('completed');
      expect(done.holdsKey).toBe(true);
      expect(ranWith[w2.runId]).toEqual([{ n: 3 }]);
      expect((await t.durable.getRun(h.runId))!.holdsKey).toBe(false);
    });

    it('after the waiting run took the key and runs, the next start waits behind it (one holder, at most one waiting)', async () => {
      const t = await createApp({ workflows: ALL });
      const h = await t.durable.start('d_again', { gate: 'ch-h' }, { key: 'chain' });
      await waitFor(() => log[h.runId]?.includes('main'));
      const w1 = await t.durable.start('d_again', { gate: 'ch-w1', n: 1 }, { key: 'chain' });
      gateOf('ch-h').open();
      await waitFor(() => log[w1.runId]?.includes('main'));
      expect((await t.durable.getRun(w1.runId))!).toMatchObject({ status: 'running', holdsKey: true });
      const w2 = await t.durable.start('d_again', { n: 2 }, { key: 'chain' });
      expect(w2.outcome).toBe('runAgain');
      expect(w2.runId).not.toBe(w1.runId);
      expect((await t.durable.getRun(w2.runId))!).toMatchObject({ status: 'waiting', holdsKey: false, runsAfterId: w1.runId });
      gateOf('ch-w1').open();
      const done = await t.durable.waitForRun(w2.runId, { timeout: 10_000 });
      expect(done).toMatchObject({ status: 'completed', holdsKey: true });
      expect(await holdersOf(t.schema, 'd_again', 'chain')).toEqual([w2.runId]);
    });

    it.each([
      ['failed', { prepGate: 'ra-failed', prepFail: true }],
      ['compensated', { gate: 'ra-compensated', fail: true }],
      ['cancelled', { gate: 'ra-cancelled' }],
    ] as const)('the waiting run takes the key when the holder ends %s (afterClose)', async (how, input) => {
      const t = await createApp({ workflows: ALL });
      const gate = `ra-${how}`;
      const h = await t.durable.start('d_again', { ...input, n: 1 }, { key: `end:${how}` });
      await waitFor(() => log[h.runId]?.includes('main'));
      const w = await t.durable.start('d_again', { n: 2 }, { key: `end:${how}` });
      expect(w.outcome).toBe('runAgain');
      if (how === 'cancelled') await t.durable.cancel(h.runId);
      gateOf(gate).open();
      expect((await t.durable.waitForRun(h.runId, { timeout: 10_000 })).status).toBe(how);
      const done = await t.durable.waitForRun(w.runId, { timeout: 10_000 });
      expect(done).toMatchObject({ status: 'completed', holdsKey: true, runsAfterId: h.runId });
      expect(ranWith[w.runId]).toEqual([{ n: 2 }]);
      expect((await t.durable.getRun(h.runId))!.holdsKey).toBe(false);
    });

    it('afterFailure: a failed holder lets the waiting run go', async () => {
      const t = await createApp({ workflows: ALL });
      const h = await t.durable.start('d_again_failure', { prepGate: 'raf1', prepFail: true }, { key: 'af-fail' });
      await waitFor(() => log[h.runId]?.includes('main'));
      const w = await t.durable.start('d_again_failure', { n: 2 }, { key: 'af-fail' });
      expect(w.outcome).toBe('runAgain');
      gateOf('raf1').open();
      expect((await t.durable.waitForRun(h.runId, { timeout: 10_000 })).status).toBe('failed');
      const done = await t.durable.waitForRun(w.runId, { timeout: 10_000 });
      expect(done).toMatchObject({ status: 'completed', holdsKey: true });
    });

    it('afterFailure: a completed holder keeps the key, and the waiting run is cancelled with a reason', async () => {
      const t = await createApp({ workflows: ALL });
      const h = await t.durable.start('d_again_failure', { gate: 'raf2' }, { key: 'af-ok' });
      await waitFor(() => log[h.runId]?.includes('main'));
      const w = await t.durable.start('d_again_failure', { n: 2 }, { key: 'af-ok' });
      expect(w.outcome).toBe('runAgain');
      gateOf('raf2').open();
      expect((await t.durable.waitForRun(h.runId, { timeout: 10_000 })).status).toBe('completed');
      const done = await t.durable.waitForRun(w.runId, { timeout: 10_000 });
      expect(done.status).toBe('cancelled');
      expect(done.holdsKey).toBe(false);
      expect(done.error).toBeTruthy();
      expect(JSON.stringify(done.error)).toMatch(/reuse|key/i); // says why
      expect(JSON.stringify(done.error)).toContain(h.runId);
      expect(ranWith[w.runId]).toBeUndefined();
      expect(await holdersOf(t.schema, 'd_again_failure', 'af-ok')).toEqual([h.runId]);
    });

    it('a holder no worker has picked up yet takes the newer input itself', async () => {
      const t = await createApp({ workflows: ALL, options: { worker: false } });
      const h = await t.durable.start('d_again', { n: 1 }, { key: 'np' });
      const r2 = await t.durable.start('d_again', { n: 2 }, { key: 'np' });
      expect(r2).toEqual({ runId: h.runId, outcome: 'runAgain' });
      const r3 = await t.durable.start('d_close', { n: 3 }, { key: 'np-close', onDuplicate: 'runAgain' });
      expect(r3.outcome).toBe('created');
      // with the newest start's priority, as a run waiting behind a holder takes it
      expect(await t.durable.start('d_close', { n: 4 }, { key: 'np-close', onDuplicate: 'runAgain', priority: 7 })).toEqual({
        runId: r3.runId,
        outcome: 'runAgain',
      });
      expect((await t.durable.getRun(h.runId))!).toMatchObject({ status: 'pending', input: { n: 2 }, holdsKey: true, priority: 0 });
      expect((await t.durable.getRun(r3.runId))!).toMatchObject({ input: { n: 4 }, priority: 7 });
      expect(await countRuns(t.schema, 'key = $1', ['np'])).toBe(1); // nothing waits behind it
    });

    it('a waiting run re-waits behind whoever took the key meanwhile (cancelExisting)', async () => {
      const t = await createApp({ workflows: ALL });
      const h = await t.durable.start('d_again', { gate: 'rw-h' }, { key: 'rw' });
      await waitFor(() => log[h.runId]?.includes('main'));
      const w = await t.durable.start('d_again', { n: 2 }, { key: 'rw' });
      expect(w.outcome).toBe('runAgain');
      const n = await t.durable.start('d_again', { gate: 'rw-n', n: 9 }, { key: 'rw', onDuplicate: 'cancelExisting' });
      expect(n.outcome).toBe('cancelExisting');
      expect((await t.durable.getRun(h.runId))!.status).toBe('cancelled');
      // the waiting run did not take the key from the cancelled holder: it now waits behind the new holder
      const waiting = (await t.durable.getRun(w.runId))!;
      expect(waiting).toMatchObject({ status: 'waiting', holdsKey: false, runsAfterId: n.runId });
      expect(await holdersOf(t.schema, 'd_again', 'rw')).toEqual([n.runId]);
      await waitFor(() => log[n.runId]?.includes('main'));
      expect((await t.durable.getRun(w.runId))!.status).toBe('waiting');
      gateOf('rw-n').open();
      gateOf('rw-h').open();
      expect((await t.durable.waitForRun(n.runId, { timeout: 10_000 })).status).toBe('completed');
      const done = await t.durable.waitForRun(w.runId, { timeout: 10_000 });
      expect(done).toMatchObject({ status: 'completed', holdsKey: true });
      expect(ranWith[w.runId]).toEqual([{ n: 2 }]);
    });

    it("the waiting run's workflow timeout counts from when it takes the key", async () => {
      const schema = freshSchema();
      const starter = await createApp({ workflows: ALL, schema, options: { worker: false } });
      const h = await starter.durable.start('d_again_timeout', { gate: 'rt' }, { key: 'rt' });
      // the holder itself must outlive the 1 s workflow timeout: drop it on this one run
      await sql(`UPDATE ${ident(schema)}.runs SET timeout_ms = NULL WHERE id = $1`, [h.runId]);
      const t = await createApp({ workflows: ALL, schema });
      await waitFor(() => log[h.runId]?.includes('main'));
      // its main step blocks on a gate nobody opens: only the workflow timeout ends it
      const w = await t.durable.start('d_again_timeout', { n: 2, gate: 'rt-w' }, { key: 'rt' });
      expect(w.outcome).toBe('runAgain');
      const created = (await t.durable.getRun(w.runId))!.createdAt.getTime();
      // well past its 1 s timeout counted from its creation, it is still waiting (not failed)
      await waitFor(() => Date.now() > created + 2_000, { timeout: 5_000 });
      expect((await t.durable.getRun(w.runId))!.status).toBe('waiting');
      gateOf('rt').open();
      expect((await t.durable.waitForRun(h.runId, { timeout: 10_000 })).status).toBe('completed');
      const done = await t.durable.waitForRun(w.runId, { timeout: 10_000 });
      // it ran, timed out (its completed first step compensated), and keeps the key it took
      expect(done).toMatchObject({ status: 'compensated', error: { code: 'timeout' }, runsAfterId: h.runId, holdsKey: true });
      expect(log[w.runId]).toEqual(['prep', 'main', 'aborted', 'undo']);
      // due when it took the key (the holder's end), and it ran for its whole 1 s from then
      const holderEnd = (await t.durable.getRun(h.runId))!.finishedAt!.getTime();
      expect(done.runAt.getTime()).toBeGreaterThanOrEqual(holderEnd);
      expect(done.finishedAt!.getTime() - done.runAt.getTime()).toBeGreaterThanOrEqual(1_000);
    });

    it('a taken-key start answers runAgain per call on a workflow whose default is useExisting', async () => {
      const t = await createApp({ workflows: ALL });
      const h = await t.durable.start('d_close', { gate: 'pc' }, { key: 'pc' });
      await waitFor(() => log[h.runId]?.includes('main'));
      const w = await t.durable.start('d_close', { n: 5 }, { key: 'pc', onDuplicate: 'runAgain' });
      expect(w.outcome).toBe('runAgain');
      expect((await t.durable.getRun(w.runId))!).toMatchObject({ status: 'waiting', runsAfterId: h.runId });
      gateOf('pc').open();
      expect((await t.durable.waitForRun(w.runId, { timeout: 10_000 })).status).toBe('completed');
    });
  });

  describe('{ sendEvent: name }', () => {
    it('the holder waiting for the event gets the input and resumes', async () => {
      const t = await createApp({ workflows: ALL });
      const h = await t.durable.start('d_send', { event: 'upd', n: 8 }, { key: 'article:42' });
      await statusIs(t, h.runId, 'waiting');
      const r = await t.durable.start('d_send', { n: 9, rev: 9 } as never, { key: 'article:42' });
      expect(r).toEqual({ runId: h.runId, outcome: 'sendEvent' });
      const done = await t.durable.waitForRun(h.runId, { timeout: 10_000 });
      expect(done.status).toBe('completed');
      expect(log[h.runId]).toContain(`event:${JSON.stringify({ n: 9, rev: 9 })}`);
      expect(done.input).toEqual({ event: 'upd', n: 8 }); // the first start's input stays the run's input
      expect(await countRuns(t.schema)).toBe(1);
    });

    it('lossless mid-step: the input is kept until the holder waits, and the newest kept one wins', async () => {
      const t = await createApp({ workflows: ALL });
      const h = await t.durable.start('d_send', { gate: 'mid', event: 'upd', n: 1 }, { key: 'mid' });
      await waitFor(() => log[h.runId]?.includes('main'));
      expect((await t.durable.getRun(h.runId))!.status).toBe('running');
      expect(await t.durable.start('d_send', { n: 2 }, { key: 'mid' })).toEqual({ runId: h.runId, outcome: 'sendEvent' });
      expect(await t.durable.start('d_send', { n: 3 }, { key: 'mid' })).toEqual({ runId: h.runId, outcome: 'sendEvent' });
      gateOf('mid').open();
      const done = await t.durable.waitForRun(h.runId, { timeout: 10_000 });
      expect(done.status).toBe('completed');
      expect(log[h.runId].filter((s) => s.startsWith('event:'))).toEqual([`event:${JSON.stringify({ n: 3 })}`]);
    });

    it('a holder waiting on something else (a sleep) keeps the event until it waits for it', async () => {
      const t = await createApp({ workflows: ALL });
      const h = await t.durable.start('d_nap', {}, { key: 'nap' });
      await statusIs(t, h.runId, 'waiting');
      expect(await t.durable.start('d_nap', { n: 5 }, { key: 'nap' })).toEqual({ runId: h.runId, outcome: 'sendEvent' });
      const done = await t.durable.waitForRun(h.runId, { timeout: 10_000 });
      expect(done.status).toBe('completed');
      expect(done.result).toEqual({ n: 5 });
    });

    it('a holder not yet picked up keeps the event for when it waits', async () => {
      const schema = freshSchema();
      const starter = await createApp({ workflows: ALL, schema, options: { worker: false } });
      const h = await starter.durable.start('d_send', { event: 'upd', n: 1 }, { key: 'early' });
      expect(await starter.durable.start('d_send', { n: 2 }, { key: 'early' })).toEqual({ runId: h.runId, outcome: 'sendEvent' });
      expect((await starter.durable.getRun(h.runId))!.input).toEqual({ event: 'upd', n: 1 });
      const t = await createApp({ workflows: ALL, schema });
      const done = await t.durable.waitForRun(h.runId, { timeout: 10_000 });
      expect(done.status).toBe('completed');
      expect(log[h.runId]).toContain(`event:${JSON.stringify({ n: 2 })}`);
    });

    it('per call on another workflow, the event name is the one given', async () => {
      const t = await createApp({ workflows: ALL });
      const h = await t.durable.start('d_close', { event: 'custom' }, { key: 'pcall' });
      await statusIs(t, h.runId, 'waiting');
      expect(await t.durable.start('d_close', { x: 1 } as never, { key: 'pcall', onDuplicate: { sendEvent: 'custom' } })).toEqual({
        runId: h.runId,
        outcome: 'sendEvent',
      });
      await t.durable.waitForRun(h.runId, { timeout: 10_000 });
      expect(log[h.runId]).toContain(`event:${JSON.stringify({ x: 1 })}`);
    });
  });
});
