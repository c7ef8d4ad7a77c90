/**
 * Multi-process crash tests: nodes in child processes (test/fixtures/node.js, on the compiled
 * library in dist/) are killed (SIGKILL) or paused (SIGSTOP) mid-step while other nodes run.
 * The in-process apps below declare the same workflows (same names and steps) as the fixture.
 */
import { EntityManager } from 'typeorm';
import { RunContext, RunInfo, Step, Workflow } from '../../src';
import { createApp, freshSchema, Gate, NodeProcess, spawnNode, sql, waitFor } from '../support';

let effectsSchema = '';
const SURVIVOR = 'survivor';

@Workflow('crash_effect')
class CrashEffect {
  @Step({ retry: { attempts: 5, initialDelay: 100 } })
  async effect(ctx: RunContext) {
    const id = await ctx.transaction(async (m: EntityManager) => {
      const rows = await m.query(`insert into "${effectsSchema}".effects (run_id, node_id) values ($1, $2) returning id`, [ctx.runId, SURVIVOR]);
      return rows[0].id as number;
    });
    return { effectId: id, node: SURVIVOR };
  }

  @Step()
  async finish() {
    return { by: SURVIVOR };
  }
}

let fenceGate = new Gate();

@Workflow('fence')
class Fence {
  @Step({ retry: { attempts: 5, initialDelay: 100 } })
  async work(ctx: RunContext) {
    await fenceGate.wait();
    await ctx.transaction((m: EntityManager) => m.query(`insert into "${effectsSchema}".effects (run_id, node_id) values ($1, $2)`, [ctx.runId, SURVIVOR]));
    ctx.put('by', SURVIVOR);
    return { by: SURVIVOR };
  }

  @Step()
  async after(ctx: RunContext) {
    return { by: SURVIVOR, ctxBy: ctx.get('by') };
  }
}

@Workflow('crash_ctx')
class CrashCtx {
  @Step()
  async first(ctx: RunContext) {
    ctx.put('from', SURVIVOR);
    return SURVIVOR;
  }

  @Step()
  async second(ctx: RunContext) {
    return { from: ctx.get('from'), by: SURVIVOR };
  }
}

@Workflow('barrier')
class Barrier {
  @Step()
  async ping() {
    return { by: SURVIVOR };
  }
}

const workflows = [CrashEffect, CrashCtx, Fence, Barrier];

async function prepareSchema(): Promise<string> {
  const schema = freshSchema();
  effectsSchema = schema;
  await sql(`create schema "${schema}"`);
  await sql(`create table "${schema}".effects (id serial primary key, run_id uuid not null, node_id text not null, at timestamptz not null default now())`);
  return schema;
}

const runIdsIn = (node: NodeProcess, step: string) => new Set(node.linesMatching(new RegExp(`^IN_STEP ${step} `)).map((l) => l.split(' ')[2]));

const idsOf = (results: unknown[]) => results.map((r) => (r as { runId: string }).runId);

async function nodeRows(schema: string) {
  return sql<{ id: string; heartbeat_at: Date; fresh: boolean }>(
    `select id, heartbeat_at, heartbeat_at > now() - interval '1 second' as fresh from "${schema}".nodes order by id`,
  );
}

describe('crashes and fencing (multi-process)', () => {
  beforeEach(() => {
    fenceGate = new Gate();
  });
  afterEach(() => fenceGate.open());

  it('a worker killed with SIGKILL mid-step: every run still completes and each ctx.transaction effect is recorded once', async () => {
    const schema = await prepareSchema();
    const victim = await spawnNode({ schema, nodeId: 'victim', env: { HOLD_MS: '600000', DURABLE_CONCURRENCY: '4' } });
    const starter = await createApp({ schema, workflows, options: { worker: false } });
    const ids = idsOf(
      await starter.durable.startMany(
        'crash_effect',
        Array.from({ length: 8 }, (_, i) => ({ input: { i } })),
      ),
    );

    // the victim holds 4 runs mid-step, after their ctx.transaction committed
    await waitFor(() => runIdsIn(victim, 'effect').size === 4, { timeout: 20_000, message: 'victim holds 4 runs' });
    const held = [...runIdsIn(victim, 'effect')];
    // another node runs meanwhile and completes the other runs
    const survivor = await createApp({ schema, workflows, concurrency: 4 });
    const others = ids.filter((id) => !held.includes(id));
    await Promise.all(others.map((id) => survivor.durable.waitForRun(id, { timeout: 20_000 })));
    for (const id of held) expect((await survivor.durable.getRun(id))!.status).toBe('running');

    victim.signal('SIGKILL');
    await victim.exited;

    const runs: RunInfo[] = await Promise.all(ids.map((id) => survivor.durable.waitForRun(id, { timeout: 20_000 })));
    expect(runs.map((r) => r.status)).toEqual(Array(8).fill('completed'));
    for (const r of runs) expect(r.result).toEqual({ by: SURVIVOR });

    const effects = await sql<{ run_id: string; node_id: string }>(`select run_id, node_id from "${schema}".effects`);
    expect(effects).toHaveLength(8);
    expect(new Set(effects.map((e) => e.run_id))).toEqual(new Set(ids));
    // the held runs' effects were committed by the victim and not repeated by the survivor
    for (const id of held) expect(effects.filter((e) => e.run_id === id)).toEqual([{ run_id: id, node_id: 'victim' }]);
  });

  it('a flow node whose worker is killed mid-step: its dependant keeps waiting, then runs once after the recovered node completes', async () => {
    const schema = await prepareSchema();
    const victim = await spawnNode({ schema, nodeId: 'victim', env: { HOLD_MS: '600000', DURABLE_WORKFLOWS: 'crash_ctx' } });
    const starter = await createApp({ schema, workflows, options: { worker: false } });
    const { runIds } = await starter.durable.startFlow(
      starter.durable
        .flow()
        .add('work', CrashCtx)
        .add('after', Barrier, {}, { deps: ['work'] }),
    );
    await waitFor(() => runIdsIn(victim, 'second').has(runIds.work), { timeout: 20_000, message: 'the victim holds the node' });
    const survivor = await createApp({ schema, workflows });
    expect((await survivor.durable.getRun(runIds.after))!.status).toBe('waiting');
    victim.signal('SIGKILL');
    await victim.exited;
    const work = await survivor.durable.waitForRun(runIds.work, { timeout: 20_000 });
    expect(work).toMatchObject({ status: 'completed', result: { from: 'victim', by: SURVIVOR } });
    const after = await survivor.durable.waitForRun(runIds.after, { timeout: 20_000 });
    expect(after).toMatchObject({ status: 'completed', result: { by: SURVIVOR }, attempt: 1 });
    expect(after.startedAt!.getTime()).toBeGreaterThanOrEqual(work.finishedAt!.getTime());
  });

  it('the context saved by a completed step survives a SIGKILL of the node running the next step', async () => {
    const schema = await prepareSchema();
    const victim = await spawnNode({ schema, nodeId: 'victim', env: { HOLD_MS: '600000' } });
    const starter = await createApp({ schema, workflows, options: { worker: false } });
    const ids = idsOf(
      await starter.durable.startMany('crash_ctx', [
        { input: {}, key: 'crash-k1' },
        { input: {}, key: 'crash-k2' },
      ]),
    );
    await waitFor(() => runIdsIn(victim, 'second').size === 2, { timeout: 20_000 });
    victim.signal('SIGKILL');
    await victim.exited;
    const survivor = await createApp({ schema, workflows });
    for (const [i, id] of ids.entries()) {
      const run = await survivor.durable.waitForRun(id, { timeout: 20_000 });
      expect(run).toMatchObject({ status: 'completed', result: { from: 'victim', by: SURVIVOR } });
      expect(run.context).toMatchObject({ from: 'victim' });
      // recovery leaves keys untouched: the run still holds its key
      expect(run).toMatchObject({ key: `crash-k${i + 1}`, holdsKey: true });
    }
  });

  it("survivors recover a dead node's runs; the dead node's row leaves the nodes table", async () => {
    const schema = await prepareSchema();
    const victim = await spawnNode({ schema, nodeId: 'dead-node', env: { HOLD_MS: '600000', DURABLE_CONCURRENCY: '3' } });
    const starter = await createApp({ schema, workflows, options: { worker: false } });
    const ids = idsOf(
      await starter.durable.startMany(
        'crash_effect',
        Array.from({ length: 3 }, (_, i) => ({ input: { i } })),
      ),
    );
    await waitFor(() => runIdsIn(victim, 'effect').size === 3, { timeout: 20_000 });
    const [s1, s2] = await Promise.all([
      spawnNode({ schema, nodeId: 'live-1', env: { DURABLE_CONCURRENCY: '2' } }),
      spawnNode({ schema, nodeId: 'live-2', env: { DURABLE_CONCURRENCY: '2' } }),
    ]);
    await waitFor(async () => (await nodeRows(schema)).length === 3, { message: 'three node rows' });
    expect((await nodeRows(schema)).map((n) => n.id)).toEqual(['dead-node', 'live-1', 'live-2']);

    victim.signal('SIGKILL');
    const runs = await Promise.all(ids.map((id) => starter.durable.waitForRun(id, { timeout: 20_000 })));
    expect(runs.map((r) => r.status)).toEqual(['completed', 'completed', 'completed']);
    // each recovered run's remaining steps ran exactly once, on a survivor
    const finishedBy = [...s1.linesMatching(/^IN_STEP effect /), ...s2.linesMatching(/^IN_STEP effect /)].map((l) => l.split(' ')[2]);
    expect(finishedBy.sort()).toEqual([...ids].sort());
    for (const r of runs) expect(['live-1', 'live-2']).toContain((r.result as { by: string }).by);
    // effects still once each (memoised), by the victim
    const effects = await sql(`select run_id, node_id from "${schema}".effects`);
    expect(effects).toHaveLength(3);
    expect(effects.every((e) => e.node_id === 'dead-node')).toBe(true);
    // the dead node is no longer a live node; the survivors are (looked at until a beat of each
    // survivor is fresh at the same time: one beat late on a busy machine is not what is tested)
    const isLive = (nodes: { id: string; fresh: boolean }[]) => nodes.filter((n) => n.fresh).map((n) => n.id);
    await waitFor(async () => isLive(await nodeRows(schema)).join() === 'live-1,live-2', { timeout: 10_000, message: 'only the survivors are live' });
  });

  it('a node restarted under the same nodeId after each SIGKILL mid-step: every interrupted attempt counts, and the step gives up after its attempts', async () => {
    const schema = await prepareSchema();
    const starter = await createApp({ schema, workflows, options: { worker: false } });
    const { runId } = await starter.durable.start('crash_effect', {});
    // `effect` allows 5 attempts: a step that takes its process down each time (OOM, a native crash)
    // must not be retried forever by a node that keeps its id across restarts (a StatefulSet pod)
    const seen: string[] = [];
    for (let crash = 1; crash <= 5; crash++) {
      const node = await spawnNode({ schema, nodeId: 'pod-0', env: { HOLD_MS: '600000' } });
      seen.push((await node.waitForLine(new RegExp(`^IN_STEP effect ${runId} `), 20_000)).split(' ')[3]);
      node.signal('SIGKILL');
      await node.exited;
    }
    expect(seen).toEqual(['1', '2', '3', '4', '5']);
    const last = await spawnNode({ schema, nodeId: 'pod-0', env: { HOLD_MS: '600000' } });
    const run = await starter.durable.waitForRun(runId, { timeout: 20_000 });
    expect(run).toMatchObject({ status: 'failed', error: { message: 'step "effect" gave up: its worker was lost during the last attempt' } });
    expect(last.linesMatching(new RegExp(`^IN_STEP effect ${runId} `))).toEqual([]);
    last.signal('SIGKILL');
    await last.exited;
    // six node processes boot one after the other, each awaited with its own deadline above
  }, 180_000);

  it('a paused (SIGSTOP) worker resumed after its run was recovered writes nothing (fencing)', async () => {
    const schema = await prepareSchema();
    const zombie = await spawnNode({
      schema,
      nodeId: 'zombie',
      // A slow heartbeat: when the zombie wakes up, its step ends before its next heartbeat could tell
      // it that the run was recovered, so only the database (the lease epoch) can refuse its write.
      // (Its own nodeTimeout is long to match: as the only worker at boot it holds the maintenance
      // lease for that long, so the survivor recovers the run some 11 s after the pause.)
      env: { HOLD_MS: '2500', DURABLE_WORKFLOWS: 'fence,barrier', DURABLE_HEARTBEAT: '5s', DURABLE_NODE_TIMEOUT: '10s' },
    });
    const starter = await createApp({ schema, workflows, options: { worker: false } });
    const { runId } = await starter.durable.start('fence', {});
    await zombie.waitForLine(new RegExp(`^IN_STEP work ${runId}`));
    zombie.signal('SIGSTOP');

    // a survivor (which does not run `barrier`) recovers the run; its own `work` step waits at a gate
    await createApp({ schema, workflows, options: { worker: { workflows: ['fence'] } } });
    await waitFor(() => fenceGate.arrived >= 1, { timeout: 40_000, message: 'the survivor runs the recovered step' });

    zombie.signal('SIGCONT');
    // the zombie's step ends and it tries to record it while the survivor still runs the same step...
    const stepDone = await zombie.waitForLine(new RegExp(`^STEP_DONE work ${runId}`), 15_000);
    // its ctx.transaction after the pause was refused and rolled back
    expect(stepDone).toMatch(/ refused:/);
    expect(await sql(`select node_id from "${schema}".effects where run_id = $1`, [runId])).toEqual([]);
    // ...and the zombie goes on working (it runs a fresh barrier run, which only it may run)
    const barrier = await starter.durable.start('barrier', {});
    const b = await starter.durable.waitForRun(barrier.runId, { timeout: 15_000 });
    expect(b).toMatchObject({ status: 'completed', result: { by: 'zombie' } });

    // the zombie's completion was refused: the run is still at `work`, running, with nothing of the zombie's
    const during = (await starter.durable.getRun(runId))!;
    expect(during).toMatchObject({ status: 'running', step: 'work', result: null });
    expect(during.context.by).toBeUndefined();

    fenceGate.open();
    const done = await starter.durable.waitForRun(runId, { timeout: 20_000 });
    expect(done).toMatchObject({ status: 'completed', result: { by: SURVIVOR, ctxBy: SURVIVOR } });
    expect(done.context).toMatchObject({ by: SURVIVOR });
    expect(await sql(`select node_id from "${schema}".effects where run_id = $1`, [runId])).toEqual([{ node_id: SURVIVOR }]);
    // and the zombie did not go on to the next step
    expect(zombie.linesMatching(new RegExp(`^IN_STEP after ${runId}`))).toEqual([]);
  });
});
