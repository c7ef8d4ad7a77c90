/**
 * Keyed flow nodes (docs/flows.md, "Keyed nodes"): a node takes its key when a `start` would create
 * a run; a taken key refuses the whole startFlow / appendFlow with KeyTakenError, nothing written;
 * the node holds and releases its key as any run; keys are unique per workflow within a flow.
 */
import { DurableService, DurableValidationError, KeyTakenError, RunContext, RunNotFoundError, Step, Workflow } from '../../src';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { countRuns, createApp, databaseUrl, Gate, ident, sql, waitFor, waitForLockWait } from '../support';
import { expectKeyTaken, holdersOf, rejection } from '../support/keys';

let gate = new Gate();

type In = { fail?: boolean; block?: boolean } | null;

async function behave(ctx: RunContext<In>) {
  const i = ctx.input ?? {};
  if (i.block) await gate.wait(ctx.signal);
  if (i.fail) throw new Error('boom');
  return ctx.flow?.name ?? 'solo';
}

@Workflow('fk_close', { retry: { attempts: 1 } })
class FkClose {
  @Step()
  async go(ctx: RunContext<In>) {
    return behave(ctx);
  }
}

@Workflow('fk_error', { onDuplicate: 'error', retry: { attempts: 1 } })
class FkError {
  @Step()
  async go(ctx: RunContext<In>) {
    return behave(ctx);
  }
}

@Workflow('fk_never', { reuse: 'never', retry: { attempts: 1 } })
class FkNever {
  @Step()
  async go(ctx: RunContext<In>) {
    return behave(ctx);
  }
}

@Workflow('fk_failure', { reuse: 'afterFailure', retry: { attempts: 1 } })
class FkFailure {
  @Step()
  async go(ctx: RunContext<In>) {
    return behave(ctx);
  }
}

const workflows = [FkClose, FkError, FkNever, FkFailure];
const FINAL = ['completed', 'failed', 'cancelled'];

async function finished(durable: DurableService, id: string) {
  return waitFor(async () => {
    const r = await durable.getRun(id);
    return r && FINAL.includes(r.status) ? r : undefined;
  });
}

/** Nothing of flow `flowId` was written: no flow row, no node. */
async function expectNothingWritten(schema: string, flowId: string) {
  expect(await countRuns(schema, 'flow_id = $1', [flowId])).toBe(0);
  expect(await sql(`SELECT 1 FROM ${ident(schema)}.flows WHERE id = $1`, [flowId])).toHaveLength(0);
}

describe('DAG flows: keyed nodes', () => {
  beforeEach(() => {
    gate = new Gate();
  });
  afterEach(() => gate.open());

  it('a keyed node holds its key like a run: a start meets it as the holder, after it completed reuse frees the key', async () => {
    const { durable, schema } = await createApp({ workflows });
    const { runIds } = await durable.startFlow(
      durable
        .flow()
        .add('a', FkClose, { block: true }, { key: 'order-1' })
        .add('b', FkClose, {}, { deps: ['a'], key: 'order-2' }),
    );
    expect(await holdersOf(schema, 'fk_close', 'order-1')).toEqual([runIds.a]);
    // b is waiting for a: it already holds its key, a start with the key gets b (useExisting)
    expect(await holdersOf(schema, 'fk_close', 'order-2')).toEqual([runIds.b]);
    expect(await durable.start(FkClose, {}, { key: 'order-2' })).toEqual({ runId: runIds.b, outcome: 'useExisting' });
    await expectKeyTaken(durable.start(FkClose, {}, { key: 'order-1', onDuplicate: 'error' }), runIds.a);
    gate.open();
    expect((await finished(durable, runIds.b)).status).toBe('completed');
    // completed under reuse 'afterClose': the key is free again and handed off to the new run
    const next = await durable.start(FkClose, {}, { key: 'order-2' });
    expect(next.outcome).toBe('created');
    expect(await holdersOf(schema, 'fk_close', 'order-2')).toEqual([next.runId]);
  });

  it('runAgain against a keyed node still waiting for its dependencies: the node takes the newer input, nothing waits behind it', async () => {
    const { durable, schema } = await createApp({ workflows });
    const { runIds } = await durable.startFlow(
      durable
        .flow()
        .add('a', FkClose, { block: true })
        .add('b', FkClose, { fail: true }, { deps: ['a'], key: 'order-3' }),
    );
    expect(await durable.getRun(runIds.b)).toMatchObject({ status: 'waiting', startedAt: null, holdsKey: true });
    expect(await durable.start(FkClose, {}, { key: 'order-3', onDuplicate: 'runAgain' })).toEqual({ runId: runIds.b, outcome: 'runAgain' });
    expect(await countRuns(schema, 'key = $1', ['order-3'])).toBe(1);
    gate.open();
    // it ran with the newer input (the first one would have failed it)
    expect(await finished(durable, runIds.b)).toMatchObject({ status: 'completed', input: {} });
    expect(await countRuns(schema, 'key = $1', ['order-3'])).toBe(1);
  });

  it('a key held by a going run refuses the whole startFlow with KeyTakenError, whatever onDuplicate; nothing is written', async () => {
    const { durable, schema } = await createApp({ workflows, options: { worker: false } });
    const holderE = await durable.start(FkError, {}, { key: 'k' });
    const holderC = await durable.start(FkClose, {}, { key: 'k' });
    const refusedE = durable.startFlow(durable.flow({ id: 'f-error' }).add('free', FkClose, {}, { key: 'free' }).add('x', FkError, {}, { key: 'k' }));
    await expectKeyTaken(refusedE, holderE.runId);
    // onDuplicate 'useExisting' (the default): a node is a run of the flow's own, never another run
    const refusedC = durable.startFlow(durable.flow({ id: 'f-use' }).add('x', FkClose, {}, { key: 'k' }));
    const err = (await rejection(refusedC)) as KeyTakenError;
    expect(err).toBeInstanceOf(KeyTakenError);
    expect(err).toMatchObject({ code: 'key_taken', holderId: holderC.runId, key: 'k', workflow: 'fk_close' });
    for (const id of ['f-error', 'f-use']) await expectNothingWritten(schema, id);
    await expect(durable.getFlowGraph('f-error')).rejects.toBeInstanceOf(RunNotFoundError);
    // the other node's key was not taken either, and the holders kept theirs
    expect(await holdersOf(schema, 'fk_close', 'free')).toEqual([]);
    expect(await holdersOf(schema, 'fk_error', 'k')).toEqual([holderE.runId]);
    expect(await holdersOf(schema, 'fk_close', 'k')).toEqual([holderC.runId]);
  });

  it("a finished holder: reuse decides (afterClose hands the key to the node, 'never' refuses)", async () => {
    const { durable, schema } = await createApp({ workflows });
    const closed = await durable.start(FkClose, {}, { key: 'k' });
    const never = await durable.start(FkNever, {}, { key: 'k' });
    await finished(durable, closed.runId);
    await finished(durable, never.runId);
    await expectKeyTaken(durable.startFlow(durable.flow({ id: 'f-never' }).add('n', FkNever, {}, { key: 'k' })), never.runId);
    await expectNothingWritten(schema, 'f-never');
    const { runIds } = await durable.startFlow(durable.flow().add('c', FkClose, {}, { key: 'k' }));
    expect(await holdersOf(schema, 'fk_close', 'k')).toEqual([runIds.c]);
    const [event] = await sql(`SELECT details FROM ${ident(schema)}.activity WHERE kind = 'key_handed_off' AND run_id = $1`, [runIds.c]);
    expect(event.details).toMatchObject({ from: closed.runId, fromStatus: 'completed', via: 'startFlow' });
  });

  it("a node's key is released as a run's: a failed node under 'afterFailure' frees it, a completed one keeps it", async () => {
    const { durable, schema } = await createApp({ workflows });
    const { runIds } = await durable.startFlow(
      durable.flow().add('bad', FkFailure, { fail: true }, { key: 'bad' }).add('good', FkFailure, {}, { key: 'good' }),
    );
    expect((await finished(durable, runIds.bad)).status).toBe('failed');
    expect((await finished(durable, runIds.good)).status).toBe('completed');
    expect((await durable.start(FkFailure, {}, { key: 'bad' })).outcome).toBe('created');
    expect(await durable.start(FkFailure, {}, { key: 'good' })).toEqual({ runId: runIds.good, outcome: 'useExisting' });
    expect(await holdersOf(schema, 'fk_failure', 'good')).toEqual([runIds.good]);
  });

  it('keys are unique per workflow within a flow: a duplicate is refused before anything is written, another workflow may share it', async () => {
    const { durable, schema } = await createApp({ workflows, options: { worker: false } });
    const dup = durable.startFlow(durable.flow({ id: 'f-dup' }).add('a', FkClose, {}, { key: 'k' }).add('b', FkClose, {}, { key: 'k' }));
    const err = (await rejection(dup)) as DurableValidationError;
    expect(err).toBeInstanceOf(DurableValidationError);
    expect(err.message).toContain('node "b": key "k" of workflow "fk_close" is already the key of node "a"');
    await expectNothingWritten(schema, 'f-dup');
    await expect(durable.startFlow(durable.flow().add('a', FkClose, {}, { key: 7 as never }))).rejects.toThrow(/key must be a string/);
    const ok = await durable.startFlow(durable.flow().add('a', FkClose, {}, { key: 'k' }).add('b', FkError, {}, { key: 'k' }));
    expect(Object.keys(ok.runIds)).toEqual(['a', 'b']);
  });

  it('appendFlow: a key of the flow refused as a duplicate, a key held elsewhere refused with KeyTakenError, nothing appended', async () => {
    const { durable, schema } = await createApp({ workflows, options: { worker: false } });
    const { flowId } = await durable.startFlow(durable.flow().add('a', FkClose, {}, { key: 'mine' }));
    const outside = await durable.start(FkError, {}, { key: 'theirs' });
    const dup = await rejection(durable.startFlow((await durable.appendFlow(flowId)).add('b', FkClose, {}, { key: 'mine' })));
    expect(dup).toBeInstanceOf(DurableValidationError);
    expect((dup as Error).message).toContain('key "mine" of workflow "fk_close" is already the key of node "a"');
    await expectKeyTaken(durable.startFlow((await durable.appendFlow(flowId)).add('c', FkError, {}, { deps: ['a'], key: 'theirs' })), outside.runId);
    expect(await countRuns(schema, 'flow_id = $1', [flowId])).toBe(1);
    const more = await durable.startFlow((await durable.appendFlow(flowId)).add('d', FkError, {}, { deps: ['a'], key: 'new' }));
    expect(await holdersOf(schema, 'fk_error', 'new')).toEqual([more.runIds.d]);
  });

  it('flows racing for the same key: one takes it, the others are refused with KeyTakenError naming it', async () => {
    const { durable, schema } = await createApp({ workflows, options: { worker: false } });
    for (let round = 0; round < 10; round++) {
      const key = `race-${round}`;
      const results = await Promise.allSettled(
        [0, 1, 2].map((i) =>
          durable.startFlow(
            durable
              .flow({ id: `${key}-${i}` })
              .add('a', FkClose)
              .add('n', FkClose, {}, { deps: ['a'], key }),
          ),
        ),
      );
      const won = results.filter((r) => r.status === 'fulfilled');
      expect(won).toHaveLength(1);
      const holder = (won[0] as PromiseFulfilledResult<{ runIds: Record<string, string> }>).value.runIds.n;
      for (const r of results.filter((x) => x.status === 'rejected')) {
        expect((r as PromiseRejectedResult).reason).toBeInstanceOf(KeyTakenError);
        expect((r as PromiseRejectedResult).reason.holderId).toBe(holder);
      }
      expect(await holdersOf(schema, 'fk_close', key)).toEqual([holder]);
      expect(await countRuns(schema, `flow_id LIKE $1`, [`${key}-%`])).toBe(2);
    }
  });

  it('a start taking the key between the check and the insert: the flow is decided again and refused, nothing written', async () => {
    const { durable, schema } = await createApp({ workflows, options: { worker: false } });
    const blocker = new Client({ connectionString: databaseUrl() });
    await blocker.connect();
    try {
      // an uncommitted flow row with the same id holds startFlow after its key check
      await blocker.query('BEGIN');
      await blocker.query(`INSERT INTO ${ident(schema)}.flows (id) VALUES ('f-late')`);
      const flow = durable.startFlow(durable.flow({ id: 'f-late' }).add('x', FkError, {}, { key: 'late' }));
      const refused = rejection(flow);
      await waitForLockWait(['flows (id, name, ignore_cancelled'], 'startFlow waits on the flow row');
      const holder = await durable.start(FkError, {}, { key: 'late' });
      await blocker.query('ROLLBACK');
      const err = await refused;
      expect(err).toBeInstanceOf(KeyTakenError);
      expect((err as KeyTakenError).holderId).toBe(holder.runId);
      await expectNothingWritten(schema, 'f-late');
      expect(await holdersOf(schema, 'fk_error', 'late')).toEqual([holder.runId]);
    } finally {
      await blocker.end();
    }
  });

  it('keyed flows and starts made at once on one caller transaction (Promise.all) all land, and the transaction goes on and commits', async () => {
    const ds = new DataSource({ type: 'postgres', url: databaseUrl() });
    await ds.initialize();
    try {
      const { durable, schema } = await createApp({ workflows, options: { dataSource: ds, worker: false } });
      const old = await durable.start(FkClose, {}, { key: 'at-once-3' });
      await sql(`UPDATE ${ident(schema)}.runs SET status = 'completed', finished_at = now() WHERE id = $1`, [old.runId]);
      let got: unknown[] = [];
      await ds.transaction(async (manager) => {
        // each in a savepoint of this transaction: two keyed flows, and a start handed the key of a finished holder
        got = await Promise.all([
          durable.startFlow(durable.flow({ id: 'f-at-once-1' }).add('x', FkClose, {}, { key: 'at-once-1' }), { manager }),
          durable.startFlow(durable.flow({ id: 'f-at-once-2' }).add('x', FkClose, {}, { key: 'at-once-2' }), { manager }),
          durable.start(FkClose, {}, { key: 'at-once-3', manager }),
        ]);
        await manager.query(`INSERT INTO ${ident(schema)}.flows (id) VALUES ('f-at-once-caller')`);
      });
      expect(got[2]).toMatchObject({ outcome: 'created' });
      for (const key of ['at-once-1', 'at-once-2', 'at-once-3']) expect(await holdersOf(schema, 'fk_close', key)).toHaveLength(1);
      expect(await countRuns(schema, 'flow_id IN ($1, $2)', ['f-at-once-1', 'f-at-once-2'])).toBe(2);
      expect(await sql(`SELECT id FROM ${ident(schema)}.flows WHERE id = 'f-at-once-caller'`)).toEqual([{ id: 'f-at-once-caller' }]);
    } finally {
      await ds.destroy();
    }
  });

  it("…inside the caller's transaction: the flow is decided again and refused, and the caller's transaction goes on and commits", async () => {
    const ds = new DataSource({ type: 'postgres', url: databaseUrl() });
    await ds.initialize();
    const blocker = new Client({ connectionString: databaseUrl() });
    await blocker.connect();
    try {
      const { durable, schema } = await createApp({ workflows, options: { dataSource: ds, worker: false } });
      await blocker.query('BEGIN');
      await blocker.query(`INSERT INTO ${ident(schema)}.flows (id) VALUES ('f-joined')`);
      let holder = '';
      let err: unknown;
      await ds.transaction(async (manager) => {
        const flow = durable.startFlow(durable.flow({ id: 'f-joined' }).add('x', FkError, {}, { key: 'joined' }), { manager });
        await waitForLockWait(['flows (id, name, ignore_cancelled'], 'startFlow waits on the flow row');
        holder = (await durable.start(FkError, {}, { key: 'joined' })).runId;
        await blocker.query('ROLLBACK');
        err = await rejection(flow);
        // the caller's transaction is still usable: its own write commits with it
        await manager.query(`INSERT INTO ${ident(schema)}.flows (id) VALUES ('f-caller')`);
      });
      expect(err).toBeInstanceOf(KeyTakenError);
      expect((err as KeyTakenError).holderId).toBe(holder);
      await expectNothingWritten(schema, 'f-joined');
      expect(await holdersOf(schema, 'fk_error', 'joined')).toEqual([holder]);
      expect(await sql(`SELECT id FROM ${ident(schema)}.flows WHERE id = 'f-caller'`)).toEqual([{ id: 'f-caller' }]);
    } finally {
      await blocker.end();
      await ds.destroy();
    }
  });
});
