/**
 * Key tombstones (`retention.keys`): pruning a holder whose key its workflow's `reuse` keeps leaves
 * a slim row that keeps the key taken until the horizon; without the option pruning frees the key,
 * as the spec says.
 */
import { KeyTakenError, RunContext, Step, Workflow } from '../../src';
import { createApp, ident, sql, TestApp } from '../support';

@Workflow('rk_never', { reuse: 'never' })
class Never {
  @Step()
  async one(ctx: RunContext<{ v: number }>) {
    await ctx.sleep('1ms');
    return { doubled: ctx.input.v * 2 };
  }
}

@Workflow('rk_after_close')
class AfterClose {
  @Step()
  async one() {
    return 1;
  }
}

@Workflow('rk_after_failure', { reuse: 'afterFailure', retry: { attempts: 1 } })
class AfterFailure {
  @Step()
  async one(ctx: RunContext<{ fail?: boolean }>) {
    if (ctx.input.fail) throw new Error('no');
    return 1;
  }
}

/** Inputs the steps of rk_never_fail ran with. */
const ranWith: unknown[] = [];
@Workflow('rk_never_fail', { reuse: 'never', retry: { attempts: 1 } })
class NeverFails {
  @Step()
  async one(ctx: RunContext<{ fail?: boolean } | null>) {
    ranWith.push(ctx.input);
    if (ctx.input?.fail) throw new Error('no');
    return { input: ctx.input };
  }
}

const ALL = [Never, AfterClose, AfterFailure, NeverFails];

/** Moves a run's end `hours` into the past (what pruning looks at). */
async function endedAgo(t: TestApp, id: string, hours: number) {
  await sql(`UPDATE ${ident(t.schema)}.runs SET finished_at = now() - $2 * interval '1 hour' WHERE id = $1`, [id, hours]);
}

async function rowsOf(t: TestApp, id: string): Promise<Record<string, number>> {
  const s = ident(t.schema);
  const [row] = await sql(
    `SELECT (SELECT count(*) FROM ${s}.runs WHERE id = $1)::int AS runs, (SELECT count(*) FROM ${s}.step_attempts WHERE run_id = $1)::int AS attempts,
            (SELECT count(*) FROM ${s}.waits WHERE run_id = $1)::int AS waits`,
    [id],
  );
  return row;
}

async function finished(t: TestApp, workflow: (typeof ALL)[number], input: object, key: string) {
  const { runId } = await t.durable.start(workflow, input, { key });
  return t.durable.waitForRun(runId, { timeout: 30_000 });
}

describe('retention.keys: key tombstones', () => {
  it('a pruned holder of a key its reuse keeps becomes a tombstone that keeps the key until the horizon, then goes', async () => {
    const t = await createApp({ workflows: ALL, options: { retention: { keys: '2d' } } });
    const run = await finished(t, Never, { v: 21 }, 'order:1');
    expect(run).toMatchObject({ status: 'completed', result: { doubled: 42 }, prunedAt: null });
    expect(await rowsOf(t, run.id)).toMatchObject({ runs: 1, waits: 1 });
    expect((await rowsOf(t, run.id)).attempts).toBeGreaterThan(0);
    await endedAgo(t, run.id, 1);

    expect((await t.durable.prune({ olderThan: '30m' })).runs).toBe(1);
    const stone = await t.durable.getRun(run.id);
    expect(stone).toMatchObject({ status: 'completed', key: 'order:1', holdsKey: true, input: null, result: null, error: null });
    expect(stone!.prunedAt).toBeInstanceOf(Date);
    expect(await rowsOf(t, run.id)).toEqual({ runs: 1, attempts: 0, waits: 0 });
    // the key is still taken: useExisting names the pruned holder, error refuses
    expect(await t.durable.start(Never, { v: 1 }, { key: 'order:1' })).toEqual({ runId: run.id, outcome: 'useExisting' });
    await expect(t.durable.start(Never, { v: 1 }, { key: 'order:1', onDuplicate: 'error' })).rejects.toBeInstanceOf(KeyTakenError);
    expect(await t.durable.explainStart(Never, {}, { key: 'order:1' })).toMatchObject({ outcome: 'useExisting', holder: { id: run.id, status: 'completed' } });
    // a second prune leaves the tombstone alone while it is within the horizon
    expect((await t.durable.prune({ olderThan: '30m' })).runs).toBe(0);

    // past the horizon the tombstone is deleted and the key is free
    await endedAgo(t, run.id, 49);
    expect((await t.durable.prune({ olderThan: '30m' })).runs).toBe(1);
    expect(await t.durable.getRun(run.id)).toBeNull();
    expect((await t.durable.start(Never, { v: 2 }, { key: 'order:1' })).outcome).toBe('created');
  });

  it('only holders whose reuse keeps the key: afterClose frees it (deleted), afterFailure keeps a completed one, frees a failed one', async () => {
    const t = await createApp({ workflows: ALL, options: { retention: { keys: '2d' } } });
    const closed = await finished(t, AfterClose, {}, 'a');
    const done = await finished(t, AfterFailure, {}, 'b');
    const failed = await finished(t, AfterFailure, { fail: true }, 'c');
    expect([closed.status, done.status, failed.status]).toEqual(['completed', 'completed', 'failed']);
    for (const r of [closed, done, failed]) await endedAgo(t, r.id, 1);
    expect((await t.durable.prune({ olderThan: '30m' })).runs).toBe(3);
    expect(await t.durable.getRun(closed.id)).toBeNull();
    expect(await t.durable.getRun(failed.id)).toBeNull();
    expect((await t.durable.getRun(done.id))?.prunedAt).toBeInstanceOf(Date);
    expect(await t.durable.start(AfterFailure, {}, { key: 'b' })).toEqual({ runId: done.id, outcome: 'useExisting' });
    expect((await t.durable.start(AfterFailure, {}, { key: 'c' })).outcome).toBe('created');
  });

  it('releaseKey frees a tombstone’s key, and the next prune deletes it', async () => {
    const t = await createApp({ workflows: ALL, options: { retention: { keys: '2d' } } });
    const run = await finished(t, Never, { v: 1 }, 'r');
    await endedAgo(t, run.id, 1);
    await t.durable.prune({ olderThan: '30m' });
    await t.durable.releaseKey(run.id, { by: 'ops' });
    expect((await t.durable.start(Never, { v: 2 }, { key: 'r' })).outcome).toBe('created');
    expect((await t.durable.prune({ olderThan: '30m' })).runs).toBe(1);
    expect(await t.durable.getRun(run.id)).toBeNull();
  });

  it('a tombstone is not retried, nor rerun without an input (its own is gone); with one, rerun starts afresh', async () => {
    const t = await createApp({ workflows: ALL, options: { retention: { keys: '2d' } } });
    const run = await finished(t, NeverFails, { fail: true }, 'gone');
    expect(run.status).toBe('failed');
    await endedAgo(t, run.id, 1);
    await t.durable.prune({ olderThan: '30m' });
    ranWith.length = 0;
    await expect(t.durable.retry(run.id)).rejects.toMatchObject({ code: 'run_not_found', message: expect.stringMatching(/was pruned/) });
    expect(await t.durable.getRun(run.id)).toMatchObject({ status: 'failed', holdsKey: true, prunedAt: expect.any(Date) });
    await t.durable.releaseKey(run.id);
    await expect(t.durable.rerun(run.id)).rejects.toMatchObject({ code: 'run_not_found', message: expect.stringMatching(/pass \{ input \}/) });
    const again = await t.durable.rerun(run.id, { input: { fail: false } });
    expect(await t.durable.waitForRun(again.runId, { timeout: 30_000 })).toMatchObject({ status: 'completed', result: { input: { fail: false } } });
    expect(ranWith).toEqual([{ fail: false }]);
  });

  it('an app that does not define the workflow prunes its holders by the definition another app wrote: the key is kept', async () => {
    const a = await createApp({ workflows: ALL });
    const run = await finished(a, Never, { v: 1 }, 'elsewhere');
    await endedAgo(a, run.id, 1);
    const b = await createApp({ workflows: [AfterClose], schema: a.schema, options: { retention: { keys: '2d' } } });
    expect((await b.durable.prune({ olderThan: '30m' })).runs).toBe(1);
    expect(await b.durable.getRun(run.id)).toMatchObject({ holdsKey: true, prunedAt: expect.any(Date) });
    expect(await a.durable.start(Never, { v: 2 }, { key: 'elsewhere' })).toEqual({ runId: run.id, outcome: 'useExisting' });
  });

  it('on a schema not migrated as far as the workflow definitions, pruning goes on by the app’s own definitions', async () => {
    const t = await createApp({ workflows: ALL, options: { retention: { keys: '2d' } } });
    const run = await finished(t, Never, { v: 1 }, 'old-schema');
    await endedAgo(t, run.id, 1);
    await sql(`DROP TABLE ${ident(t.schema)}.workflow_definitions`);
    expect((await t.durable.prune({ olderThan: '30m' })).runs).toBe(1);
    expect(await t.durable.getRun(run.id)).toMatchObject({ prunedAt: expect.any(Date) });
  });

  it('rerunFlow of a node that is a key tombstone rejects with RunNotFoundError (its input is gone)', async () => {
    const t = await createApp({ workflows: ALL, options: { retention: { keys: '2d' } } });
    const { flowId, runIds } = await t.durable.startFlow(t.durable.flow().add('n', Never, { v: 1 }, { key: 'in-flow' }));
    await t.durable.waitForRun(runIds.n, { timeout: 30_000 });
    await endedAgo(t, runIds.n, 1);
    await t.durable.prune({ olderThan: '30m' });
    await t.durable.releaseKey(runIds.n);
    await expect(t.durable.rerunFlow(flowId, { from: 'n' })).rejects.toMatchObject({ code: 'run_not_found', message: expect.stringMatching(/was pruned/) });
    expect((await t.durable.getFlowGraph(flowId)).nodes.map((n) => n.runId)).toEqual([runIds.n]);
  });

  it("without retention.keys pruning a 'never' holder frees its key (the spec's behaviour)", async () => {
    const t = await createApp({ workflows: ALL });
    const run = await finished(t, Never, { v: 1 }, 'n');
    await endedAgo(t, run.id, 1);
    expect((await t.durable.prune({ olderThan: '30m' })).runs).toBe(1);
    expect(await t.durable.getRun(run.id)).toBeNull();
    expect((await t.durable.start(Never, { v: 2 }, { key: 'n' })).outcome).toBe('created');
  });

  it('a retention.keys that is not a duration is refused at startup', async () => {
    await expect(createApp({ workflows: ALL, options: { retention: { keys: 'soon' } } })).rejects.toThrow(/retention\.keys/);
  });
});
