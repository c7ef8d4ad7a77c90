import { randomUUID } from 'crypto';
import { DurableValidationError, RunContext, RunInfo, RunNotFoundError, Step, TimeoutError, Workflow } from '../../src';
import { createApp, Gate, waitFor } from '../support';

let gate = new Gate();

@Workflow('queries_fast')
class Fast {
  @Step()
  async one(ctx: RunContext<{ i: number }>) {
    return { doubled: ctx.input.i * 2 };
  }
}

@Workflow('queries_gated')
class Gated {
  @Step()
  async hold(ctx: RunContext) {
    await gate.wait(ctx.signal);
    return 'released';
  }
}

@Workflow('queries_failing')
class Failing {
  @Step({ retry: { attempts: 1 } })
  async boom() {
    throw new Error('boom!');
  }
}

describe('getRun / waitForRun / listRuns', () => {
  beforeEach(() => {
    gate = new Gate();
  });
  afterEach(() => gate.open());

  it('getRun returns null for an unknown id', async () => {
    const { durable } = await createApp({ workflows: [Fast] });
    await expect(durable.getRun(randomUUID())).resolves.toBeNull();
  });

  it('getRun returns null for an id that is not a run id at all (e.g. from a URL)', async () => {
    const { durable } = await createApp({ workflows: [Fast] });
    await expect(durable.getRun('not-a-run-id')).resolves.toBeNull();
    await expect(durable.getRun('')).resolves.toBeNull();
  });

  it('listRuns with a cursor that is not one of its cursors: [] or DurableValidationError, never a raw database error', async () => {
    const { durable } = await createApp({ workflows: [Fast], options: { worker: false } });
    await durable.start('queries_fast', { i: 1 });
    try {
      const page = await durable.listRuns({ cursor: 'garbage' } as never);
      expect(Array.isArray(page)).toBe(true);
    } catch (err) {
      expect(err).toBeInstanceOf(DurableValidationError);
    }
  });

  it('retry and rerun of an id that is not a run id reject with RunNotFoundError', async () => {
    const { durable } = await createApp({ workflows: [Fast], options: { worker: false } });
    await expect(durable.retry('not-a-run-id')).rejects.toBeInstanceOf(RunNotFoundError);
    await expect(durable.rerun('not-a-run-id')).rejects.toBeInstanceOf(RunNotFoundError);
    await expect(durable.rerun(randomUUID())).rejects.toBeInstanceOf(RunNotFoundError);
  });

  it('getRun returns the RunInfo of a run, with every field of RunInfo', async () => {
    const { durable } = await createApp({ workflows: [Fast] });
    const { runId } = await durable.start('queries_fast', { i: 4 }, { key: 'q-1' });
    const done = await durable.waitForRun(runId, { timeout: 10_000 });
    const run = (await durable.getRun(runId)) as RunInfo;
    expect(run).toEqual(done);
    expect(run).toMatchObject({
      id: runId,
      workflow: 'queries_fast',
      status: 'completed',
      key: 'q-1',
      input: { i: 4 },
      result: { doubled: 8 },
      error: null,
    });
    for (const field of [
      'holdsKey',
      'context',
      'attempt',
      'step',
      'runsAfterId',
      'flowId',
      'flowName',
      'name',
      'deps',
      'readds',
      'createdAt',
      'startedAt',
      'finishedAt',
    ]) {
      expect(run).toHaveProperty(field);
    }
    expect(run.createdAt).toBeInstanceOf(Date);
    expect(run.startedAt).toBeInstanceOf(Date);
    expect(run.finishedAt).toBeInstanceOf(Date);
    expect(run.finishedAt!.getTime()).toBeGreaterThanOrEqual(run.startedAt!.getTime());
  });

  it('waitForRun resolves once the run finishes, for completed and failed runs', async () => {
    const { durable } = await createApp({ workflows: [Gated, Failing] });
    const { runId } = await durable.start('queries_gated');
    const waiting = durable.waitForRun(runId, { timeout: 10_000 });
    let settled = false;
    void waiting.then(
      () => (settled = true),
      () => (settled = true),
    );
    await waitFor(async () => (await durable.getRun(runId))?.status === 'running');
    expect(settled).toBe(false);
    gate.open();
    const run = await waiting;
    expect(run).toMatchObject({ id: runId, status: 'completed', result: 'released' });

    const failed = await durable.start('queries_failing');
    const f = await durable.waitForRun(failed.runId, { timeout: 10_000 });
    expect(f.status).toBe('failed');
    expect(JSON.stringify(f.error)).toMatch(/boom!/);
  });

  it('waitForRun rejects with TimeoutError when the run does not finish in time', async () => {
    const { durable } = await createApp({ workflows: [Gated] });
    const { runId } = await durable.start('queries_gated');
    const t0 = Date.now();
    const err = await durable.waitForRun(runId, { timeout: 500 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TimeoutError);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(450);
    expect(Date.now() - t0).toBeLessThan(5_000);
    expect((await durable.getRun(runId))!.status).not.toBe('completed');
    gate.open();
    await durable.waitForRun(runId, { timeout: 10_000 });
  });

  it('listRuns filters by workflow, status and key', async () => {
    const { durable } = await createApp({ workflows: [Fast, Gated, Failing] });
    const fast = await Promise.all([0, 1, 2].map((i) => durable.start('queries_fast', { i }, { key: `f-${i}` })));
    const gated = await durable.start('queries_gated', undefined, { key: 'g-0' });
    const failing = await durable.start('queries_failing', undefined, { key: 'x-0' });
    await Promise.all(fast.map((r) => durable.waitForRun(r.runId, { timeout: 10_000 })));
    await durable.waitForRun(failing.runId, { timeout: 10_000 });
    await waitFor(async () => (await durable.getRun(gated.runId))?.status === 'running');

    const ids = (runs: RunInfo[]) => runs.map((r) => r.id).sort();
    expect(ids(await durable.listRuns({ workflow: 'queries_fast' }))).toEqual(fast.map((r) => r.runId).sort());
    expect(ids(await durable.listRuns({ status: 'running' }))).toEqual([gated.runId]);
    expect(ids(await durable.listRuns({ status: 'failed' }))).toEqual([failing.runId]);
    expect(ids(await durable.listRuns({ workflow: 'queries_fast', status: 'completed' }))).toHaveLength(3);
    expect(ids(await durable.listRuns({ workflow: 'queries_fast', status: 'failed' }))).toEqual([]);
    expect(ids(await durable.listRuns({ key: 'f-1' }))).toEqual([fast[1].runId]);
    expect(ids(await durable.listRuns({ workflow: 'queries_fast', key: 'f-2' }))).toEqual([fast[2].runId]);
    expect(ids(await durable.listRuns({ workflow: 'queries_gated', key: 'f-2' }))).toEqual([]);
    expect(await durable.listRuns({})).toHaveLength(5);
    gate.open();
    await durable.waitForRun(gated.runId, { timeout: 10_000 });
  });

  it('listRuns pages with limit and cursor: pages do not overlap and cover every run', async () => {
    const { durable } = await createApp({ workflows: [Fast], options: { worker: false } });
    const started = await durable.startMany(
      'queries_fast',
      Array.from({ length: 23 }, (_, i) => ({ input: { i } })),
    );
    const all = new Set(started.map((r) => (r as { runId: string }).runId));
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    for (;;) {
      const page = await durable.listRuns({ workflow: 'queries_fast', limit: 5, cursor } as never);
      pages++;
      expect(page.length).toBeLessThanOrEqual(5);
      if (page.length === 0) break;
      seen.push(...page.map((r) => r.id));
      cursor = (page as unknown as { nextCursor?: string }).nextCursor ?? page[page.length - 1].id;
      if (page.length < 5) break;
      expect(pages).toBeLessThan(20);
    }
    expect(seen).toHaveLength(23);
    expect(new Set(seen).size).toBe(23);
    expect(new Set(seen)).toEqual(all);
  });
});
