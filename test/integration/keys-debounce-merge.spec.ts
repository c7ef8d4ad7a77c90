/**
 * `debounce.merge`: what a debounced run keeps when a start lands in its window ('last', 'first' or
 * a function folded under the run's row lock), and debounced starts inside a caller's transaction
 * that commits or rolls back.
 */
import { DataSource } from 'typeorm';
import { DurableValidationError, Step, Workflow } from '../../src';
import { createApp, databaseUrl, ident, sql, TestApp } from '../support';

type Items = { items: number[] };

@Workflow('dm_fold', { debounce: { period: '1h', merge: (held: Items, incoming: Items) => ({ items: [...held.items, ...incoming.items] }) } })
class Fold {
  @Step()
  async one() {
    return 1;
  }
}

@Workflow('dm_first', { debounce: { period: '1h', merge: 'first' } })
class First {
  @Step()
  async one() {
    return 1;
  }
}

@Workflow('dm_last', { debounce: { period: '1h' } })
class Last {
  @Step()
  async one() {
    return 1;
  }
}

@Workflow('dm_throws', {
  debounce: {
    period: '1h',
    merge: (held: { n: number }, incoming: { n: number }) => {
      if (incoming.n < 0) throw new Error('negative input');
      return { n: incoming.n > 100 ? BigInt(incoming.n) : held.n + incoming.n };
    },
  },
})
class Throws {
  @Step()
  async one() {
    return 1;
  }
}

const ALL = [Fold, First, Last, Throws];

async function runRow(t: TestApp, id: string): Promise<{ input: unknown; run_at: Date }> {
  const [row] = await sql(`SELECT input, run_at FROM ${ident(t.schema)}.runs WHERE id = $1`, [id]);
  return row;
}

async function duplicates(t: TestApp, id: string): Promise<number> {
  const [row] = await sql(`SELECT count(*)::int AS n FROM ${ident(t.schema)}.activity WHERE run_id = $1 AND kind = 'key_duplicate'`, [id]);
  return row.n;
}

describe('debounce merge', () => {
  it('a merge function under 50 concurrent starts of one key folds every input in exactly once', async () => {
    const t = await createApp({ workflows: ALL, options: { worker: false } });
    const results = await Promise.all(Array.from({ length: 50 }, (_, i) => t.durable.start(Fold, { items: [i] }, { key: 'burst' })));
    const holder = results.find((r) => r.outcome === 'created')!.runId;
    expect(results.filter((r) => r.outcome === 'created')).toHaveLength(1);
    expect(results.every((r) => r.runId === holder && (r.outcome === 'created' || r.outcome === 'debounced'))).toBe(true);
    const { input } = await runRow(t, holder);
    expect([...(input as Items).items].sort((a, b) => a - b)).toEqual(Array.from({ length: 50 }, (_, i) => i));
    expect(await duplicates(t, holder)).toBe(49);
  });

  it("'first' keeps the input the run has and still restarts its window; 'last' takes the newer one", async () => {
    const t = await createApp({ workflows: ALL, options: { worker: false } });
    const first = (await t.durable.start(First, { v: 1 }, { key: 'k' })).runId;
    const before = await runRow(t, first);
    expect(await t.durable.start(First, { v: 2 }, { key: 'k' })).toEqual({ runId: first, outcome: 'debounced' });
    const after = await runRow(t, first);
    expect(after.input).toEqual({ v: 1 });
    expect(after.run_at.getTime()).toBeGreaterThan(before.run_at.getTime());
    const last = (await t.durable.start(Last, { v: 1 }, { key: 'k' })).runId;
    await t.durable.start(Last, { v: 2 }, { key: 'k' });
    expect((await runRow(t, last)).input).toEqual({ v: 2 });
  });

  it('a merge that throws, or returns what JSON cannot hold, rejects the start and changes nothing', async () => {
    const t = await createApp({ workflows: ALL, options: { worker: false } });
    const id = (await t.durable.start(Throws, { n: 1 }, { key: 'k' })).runId;
    const before = await runRow(t, id);
    await expect(t.durable.start(Throws, { n: -1 }, { key: 'k' })).rejects.toThrow('negative input');
    const err = await t.durable.start(Throws, { n: 101 }, { key: 'k' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DurableValidationError);
    expect((err as Error).message).toMatch(/^start dm_throws: debounce\.merge: result\.n is a BigInt/);
    expect(await runRow(t, id)).toEqual(before);
    expect(await duplicates(t, id)).toBe(0);
    expect(await t.durable.start(Throws, { n: 2 }, { key: 'k' })).toEqual({ runId: id, outcome: 'debounced' });
    expect((await runRow(t, id)).input).toEqual({ n: 3 });
  });

  it('in startMany, a merge that throws refuses that item alone: the items before and after it are started', async () => {
    const t = await createApp({ workflows: ALL, options: { worker: false } });
    const held = (await t.durable.start(Throws, { n: 1 }, { key: 'held' })).runId;
    const before = await runRow(t, held);
    const results = await t.durable.startMany(Throws, [
      { input: { n: 5 }, key: 'fresh' },
      { input: { n: -1 }, key: 'held' },
      { input: { n: 7 }, key: 'other' },
    ]);
    expect(results[0]).toMatchObject({ outcome: 'created' });
    expect(results[1]).toEqual({ error: new Error('negative input') });
    expect(results[2]).toMatchObject({ outcome: 'created' });
    expect(await runRow(t, held)).toEqual(before);
    expect(await duplicates(t, held)).toBe(0);
  });

  it('an invalid merge is refused when the class is defined', () => {
    expect(() => Workflow('dm_bad', { debounce: { period: '1s', merge: 'middle' as never } })).toThrow(/debounce\.merge must be 'last', 'first' or a function/);
  });

  describe("inside a caller's transaction", () => {
    let ds: DataSource;
    beforeAll(async () => {
      ds = await new DataSource({ type: 'postgres', url: databaseUrl() }).initialize();
    });
    afterAll(async () => {
      await ds?.destroy();
    });

    it('a first start and a re-add roll back with it: no run, then the holder keeps its input, window and re-add count', async () => {
      const t = await createApp({ workflows: ALL, options: { worker: false, dataSource: ds } });
      const rollback = new Error('rolled back on purpose');
      await expect(
        ds.transaction(async (manager) => {
          await t.durable.start(Fold, { items: [0] }, { key: 'tx', manager });
          throw rollback;
        }),
      ).rejects.toBe(rollback);
      expect(await t.durable.listRuns({ workflow: Fold, key: 'tx' })).toEqual([]);

      const id = (await t.durable.start(Fold, { items: [1] }, { key: 'tx' })).runId;
      const before = await runRow(t, id);
      await expect(
        ds.transaction(async (manager) => {
          expect(await t.durable.start(Fold, { items: [2] }, { key: 'tx', manager })).toEqual({ runId: id, outcome: 'debounced' });
          throw rollback;
        }),
      ).rejects.toBe(rollback);
      expect(await runRow(t, id)).toEqual(before);
      expect(await duplicates(t, id)).toBe(0);

      await ds.transaction((manager) => t.durable.start(Fold, { items: [3] }, { key: 'tx', manager }));
      expect((await runRow(t, id)).input).toEqual({ items: [1, 3] });
      expect(await duplicates(t, id)).toBe(1);
    });
  });
});
