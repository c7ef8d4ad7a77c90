import { DataSource } from 'typeorm';
import { DurableError, DurableService, DurableValidationError, RunContext, Step, UnknownWorkflowError, Workflow } from '../../src';
import { DurableConnection } from '../../src/core/durable.connection';
import { countRuns, createApp, databaseUrl, sql, TestApp } from '../support';

const executed: string[] = [];

@Workflow('start_echo')
class Echo {
  @Step()
  async echo(ctx: RunContext<unknown>) {
    executed.push(ctx.runId);
    return { input: ctx.input ?? null, key: ctx.key ?? null };
  }
}

async function rejection(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('expected a rejection, but it resolved');
}

async function expectInvalid(p: Promise<unknown>) {
  const err = await rejection(p);
  expect(err).toBeInstanceOf(DurableValidationError);
  expect(err).toBeInstanceOf(DurableError);
  expect((err as DurableValidationError).code).toBe('invalid');
  return err as DurableValidationError;
}

describe('DurableService.start / startMany', () => {
  let t: TestApp;
  let durable: DurableService;

  beforeEach(async () => {
    executed.length = 0;
    t = await createApp({ workflows: [Echo] });
    durable = t.durable;
  });

  describe('start', () => {
    it('starts a run without a key', async () => {
      const res = await durable.start('start_echo', { a: 1 });
      expect(res).toEqual({ runId: expect.any(String), outcome: 'created' });
      const run = await durable.waitForRun(res.runId, { timeout: 10_000 });
      expect(run).toMatchObject({ id: res.runId, workflow: 'start_echo', status: 'completed', key: null });
      expect(run.result).toEqual({ input: { a: 1 }, key: null });
    });

    it('treats key: null as no key (two starts make two runs)', async () => {
      const a = await durable.start('start_echo', { a: 1 }, { key: null } as never);
      const b = await durable.start('start_echo', { a: 2 }, { key: null } as never);
      expect(a.outcome).toBe('created');
      expect(b.outcome).toBe('created');
      expect(a.runId).not.toBe(b.runId);
      const [ra, rb] = await Promise.all([durable.waitForRun(a.runId, { timeout: 10_000 }), durable.waitForRun(b.runId, { timeout: 10_000 })]);
      expect(ra.key).toBeNull();
      expect(rb.key).toBeNull();
      expect(ra.holdsKey).toBe(false);
    });

    it('starts without input', async () => {
      const { runId } = await durable.start('start_echo');
      const run = await durable.waitForRun(runId, { timeout: 10_000 });
      expect(run.status).toBe('completed');
    });

    it('accepts a key of 255 bytes and a multi-byte key of exactly 255 bytes', async () => {
      const k1 = 'k'.repeat(255);
      const k2 = 'é'.repeat(127) + 'x'; // 254 + 1 bytes
      const r1 = await durable.start('start_echo', {}, { key: k1 });
      const r2 = await durable.start('start_echo', {}, { key: k2 });
      expect((await durable.waitForRun(r1.runId, { timeout: 10_000 })).key).toBe(k1);
      expect((await durable.waitForRun(r2.runId, { timeout: 10_000 })).key).toBe(k2);
    });

    it.each([
      ['an empty key', ''],
      ['a 256-byte key', 'k'.repeat(256)],
      ['a multi-byte key of 128 chars but 256 bytes', 'é'.repeat(128)],
      ['a 4-byte-char key of 64 chars but 256 bytes', '😀'.repeat(64)],
      ['a number key', 42],
      ['an object key', { id: 1 }],
      ['a boolean key', true],
    ])('refuses %s with DurableValidationError and writes nothing', async (_label, key) => {
      const err = await expectInvalid(durable.start('start_echo', { a: 1 }, { key: key as never }));
      expect(err.message).toMatch(/key/i);
      expect(await countRuns(t.schema)).toBe(0);
    });

    it('refuses input with a BigInt, a cycle, a function or nesting past 1,000 levels, and writes nothing', async () => {
      const cyclic: Record<string, unknown> = { a: 1 };
      cyclic.self = cyclic;
      await expectInvalid(durable.start('start_echo', { n: BigInt(1) }));
      await expectInvalid(durable.start('start_echo', BigInt(7) as never));
      await expectInvalid(durable.start('start_echo', cyclic));
      await expectInvalid(durable.start('start_echo', { fn: () => 1 }));
      await expectInvalid(durable.start('start_echo', (() => 1) as never));
      // nested deeper than the bound: refused, not a RangeError from a walk of the value
      const deep = (n: number): unknown => Array.from({ length: n }).reduce<unknown>((inner) => [inner], 1);
      expect((await expectInvalid(durable.start('start_echo', deep(5_000)))).message).toMatch(/nested more than 1000 levels deep/);
      expect(await countRuns(t.schema)).toBe(0);
      expect((await durable.start('start_echo', deep(999))).outcome).toBe('created');
    });

    it('refuses an unknown workflow with UnknownWorkflowError and writes nothing', async () => {
      const err = await rejection(durable.start('no_such_workflow', {}));
      expect(err).toBeInstanceOf(UnknownWorkflowError);
      expect(err).toBeInstanceOf(DurableError);
      expect((err as Error).message).toMatch(/no_such_workflow/);
      class NotAWorkflow {}
      await expect(durable.start(NotAWorkflow as never, {})).rejects.toBeInstanceOf(UnknownWorkflowError);
      expect(await countRuns(t.schema)).toBe(0);
    });

    it.each([
      ['delay: "soon"', { delay: 'soon' }],
      ['delay: -5', { delay: -5 }],
      ['runAt: an invalid Date', { runAt: new Date('nope') }],
      ['runAt: a number', { runAt: 12 }],
      // valid JavaScript Dates Postgres cannot store
      ['runAt: the year 10000', { runAt: new Date('+010000-01-01T00:00:00.000Z') }],
      ['runAt: before the year 1', { runAt: new Date(-8.64e15) }],
      ['delay: ending after the year 9999', { delay: 1e15 }],
      ['runAt and delay both', { runAt: new Date(Date.now() + 60_000), delay: '1m' }],
    ])('refuses %s with DurableValidationError and writes nothing', async (_label, opts) => {
      await expectInvalid(durable.start('start_echo', {}, opts as never));
      expect(await countRuns(t.schema)).toBe(0);
    });

    it.each([
      ['a NUL character in the input', { input: { s: 'a\u0000b' } }],
      ['a lone surrogate in the input', { input: { s: 'x\ud800y' } }],
      ['a NUL character in the key', { input: {}, key: 'k\u0000' }],
    ])('%s: refused with DurableValidationError or stored faithfully, never a raw database error', async (_l, item) => {
      let result: unknown;
      try {
        result = await durable.start('start_echo', item.input, 'key' in item ? { key: item.key } : {});
      } catch (err) {
        expect(err).toBeInstanceOf(DurableValidationError);
        expect(await countRuns(t.schema)).toBe(0);
        return;
      }
      const run = await durable.waitForRun((result as { runId: string }).runId, { timeout: 10_000 });
      expect(run.input).toEqual(item.input);
      if ('key' in item) expect(run.key).toBe(item.key);
    });

    it('refuses input over the 1 MiB JSON limit and writes nothing', async () => {
      const MiB = 1 << 20;
      await expectInvalid(durable.start('start_echo', { s: 'x'.repeat(MiB + 10) }));
      expect(await countRuns(t.schema)).toBe(0);
      // just under the limit is fine
      const ok = await durable.start('start_echo', { s: 'y'.repeat(MiB - 100) });
      expect((await durable.waitForRun(ok.runId, { timeout: 10_000 })).status).toBe('completed');
    });

    it('counts the 1 MiB input limit in bytes, like keys: 1.2 MB of two-byte characters is refused', async () => {
      // 600k two-byte characters: 1.2 MB of UTF-8 JSON, although fewer than 1 Mi characters
      await expectInvalid(durable.start('start_echo', { s: 'é'.repeat(600_000) }));
      expect(await countRuns(t.schema)).toBe(0);
    });

    it('honours delay and runAt: the run stays pending until due', async () => {
      const later = await durable.start('start_echo', {}, { delay: '1h' });
      const at = await durable.start('start_echo', {}, { runAt: new Date(Date.now() + 3_600_000) });
      const soon = await durable.start('start_echo', {});
      await durable.waitForRun(soon.runId, { timeout: 10_000 }); // the worker is alive and polling
      expect((await durable.getRun(later.runId))!.status).toBe('pending');
      expect((await durable.getRun(at.runId))!.status).toBe('pending');
      expect(executed).toEqual([soon.runId]);
    });
  });

  describe('startMany', () => {
    it('creates every item and returns results in order', async () => {
      const items = Array.from({ length: 25 }, (_, i) => ({ input: { i }, key: i % 5 === 0 ? null : `k-${i}` }));
      const results = await durable.startMany('start_echo', items as never);
      expect(results).toHaveLength(25);
      const ids = results.map((r) => {
        expect(r).toEqual({ runId: expect.any(String), outcome: 'created' });
        return (r as { runId: string }).runId;
      });
      expect(new Set(ids).size).toBe(25);
      const runs = await Promise.all(ids.map((id) => durable.waitForRun(id, { timeout: 20_000 })));
      runs.forEach((run, i) => {
        expect(run.status).toBe('completed');
        expect(run.input).toEqual({ i });
        expect(run.key).toBe(i % 5 === 0 ? null : `k-${i}`);
      });
    });

    it('rejects the whole batch when one item is bad, before anything is written', async () => {
      const good = { input: { ok: true }, key: 'fine' };
      await expectInvalid(durable.startMany('start_echo', [good, { input: {}, key: 'x'.repeat(256) }, good]));
      await expectInvalid(durable.startMany('start_echo', [good, { input: { b: BigInt(2) } }]));
      await expectInvalid(durable.startMany('start_echo', [{ input: {}, key: '' }]));
      // the item named, the workflow once
      const badDate = await expectInvalid(durable.startMany('start_echo', [good, { runAt: new Date('nope') }]));
      expect(badDate.message).toBe('start start_echo: items[1].runAt must be a valid Date of the years 1 to 9999');
      expect(badDate.errors[0].property).toBe('items[1].runAt');
      await expect(durable.startMany('no_such_workflow', [good])).rejects.toBeInstanceOf(UnknownWorkflowError);
      expect(await countRuns(t.schema)).toBe(0);
    });

    it('refuses a hole in a sparse array of items, and options that are not an object; null options are none', async () => {
      // eslint-disable-next-line no-sparse-arrays
      const sparse = [, { input: {} }] as never;
      const err = await expectInvalid(durable.startMany('start_echo', sparse));
      expect(err.message).toMatch(/items\[0\] must be an object of options/);
      expect((await expectInvalid(durable.startMany('start_echo', [{}], 'x' as never))).message).toMatch(/options must be an object of options \(manager\)/);
      expect(await countRuns(t.schema)).toBe(0);
      expect(await durable.startMany('start_echo', [{}], null as never)).toEqual([{ runId: expect.any(String), outcome: 'created' }]);
    });

    it('accepts an empty batch', async () => {
      await expect(durable.startMany('start_echo', [])).resolves.toEqual([]);
    });
  });

  describe("manager: joining the caller's transaction", () => {
    let ds: DataSource;
    beforeEach(async () => {
      ds = new DataSource({ type: 'postgres', url: databaseUrl() });
      await ds.initialize();
      await ds.query(`create table "${t.schema}".articles (id serial primary key, title text not null)`);
    });
    afterEach(async () => {
      await ds.destroy();
    });

    it('commit: the run exists and runs; the transaction stays usable after start', async () => {
      let runId = '';
      await ds.transaction(async (manager) => {
        await manager.query(`insert into "${t.schema}".articles (title) values ('before')`);
        runId = (await durable.start('start_echo', { article: 1 }, { manager, key: 'article-1' })).runId;
        // the caller's transaction is still usable
        await manager.query(`insert into "${t.schema}".articles (title) values ('after')`);
        // not visible outside the transaction yet
        expect(await countRuns(t.schema)).toBe(0);
      });
      const run = await durable.waitForRun(runId, { timeout: 10_000 });
      expect(run).toMatchObject({ status: 'completed', key: 'article-1' });
      const titles = await ds.query(`select title from "${t.schema}".articles order by id`);
      expect(titles).toEqual([{ title: 'before' }, { title: 'after' }]);
    });

    it('rollback: no run, no key, and nothing ever executes', async () => {
      let runId = '';
      await expect(
        ds.transaction(async (manager) => {
          runId = (await durable.start('start_echo', { article: 2 }, { manager, key: 'article-2' })).runId;
          throw new Error('caller aborts');
        }),
      ).rejects.toThrow('caller aborts');
      expect(runId).not.toBe('');
      expect(await durable.getRun(runId)).toBeNull();
      expect(await countRuns(t.schema)).toBe(0);
      // the key was not left taken: a new start with it creates a run
      const again = await durable.start('start_echo', {}, { key: 'article-2' });
      expect(again.outcome).toBe('created');
      await durable.waitForRun(again.runId, { timeout: 10_000 });
      expect(executed).toEqual([again.runId]);
    });

    it('startMany joins the transaction too', async () => {
      const qr = ds.createQueryRunner();
      await qr.connect();
      await qr.startTransaction();
      const results = await durable.startMany('start_echo', [{ input: { i: 1 } }, { input: { i: 2 } }], {
        manager: qr.manager,
      });
      expect(results).toHaveLength(2);
      await qr.rollbackTransaction();
      await qr.release();
      expect(await countRuns(t.schema)).toBe(0);
    });

    it('a delay of a fraction of a millisecond is rounded, not sent to the database as it is', async () => {
      let runId = '';
      await ds.transaction(async (manager) => {
        runId = (await durable.start('start_echo', {}, { manager, delay: 1.7 })).runId;
        await manager.query(`insert into "${t.schema}".articles (title) values ('kept')`);
      });
      const [row] = await ds.query(`select extract(epoch from run_at - created_at)::text as s from "${t.schema}".runs where id = $1`, [runId]);
      expect(Number(row.s)).toBe(0.002);
      expect(await ds.query(`select title from "${t.schema}".articles`)).toEqual([{ title: 'kept' }]);
    });

    it('a manager that is not the EntityManager of an open transaction is refused, not used to commit on its own', async () => {
      const finished = await ds.transaction(async (manager) => manager);
      const qr = ds.createQueryRunner();
      await qr.connect();
      try {
        for (const manager of [ds, ds.manager, qr.manager, finished, {}, 'tx']) {
          const err = await expectInvalid(durable.start('start_echo', {}, { manager } as never));
          expect(err.message).toMatch(/manager must be the EntityManager of an open transaction/);
          await expectInvalid(durable.startMany('start_echo', [{}], { manager } as never));
          await expectInvalid(durable.startFlow(durable.flow().add('a', Echo), { manager } as never));
        }
      } finally {
        await qr.release();
      }
      expect(await countRuns(t.schema)).toBe(0);
    });

    it('a manager whose transaction an earlier statement aborted is refused with DurableValidationError naming it, never a database error', async () => {
      await ds
        .transaction(async (manager) => {
          await expect(manager.query('SELECT 1/0')).rejects.toThrow(/division by zero/);
          for (const call of [
            () => durable.start('start_echo', {}, { manager }),
            () => durable.startMany('start_echo', [{}], { manager }),
            () => durable.startFlow(durable.flow().add('a', Echo), { manager }),
          ]) {
            const err = await expectInvalid(call());
            expect(err.message).toMatch(/manager's transaction is aborted/);
          }
          throw new Error('rolled back');
        })
        .catch((err: Error) => expect(err.message).toBe('rolled back'));
      expect(await countRuns(t.schema)).toBe(0);
    });

    it("a manager of another database is refused before anything is written, and the caller's transaction goes on", async () => {
      const name = `${t.schema}_other`;
      await sql(`CREATE DATABASE ${name}`);
      const url = new URL(databaseUrl());
      url.pathname = `/${name}`;
      const other = new DataSource({ type: 'postgres', url: url.toString() });
      await other.initialize();
      try {
        // even with a schema of the module's name there, where the run would be written and never seen
        await other.query(`CREATE SCHEMA "${t.schema}"`);
        await other.transaction(async (manager) => {
          const err = await expectInvalid(durable.start('start_echo', {}, { manager }));
          expect(err.message).toMatch(new RegExp(`manager is a transaction on database "${name}", not on the module's database`));
          await expectInvalid(durable.startFlow(durable.flow().add('a', Echo), { manager }));
          expect(await manager.query('SELECT 1 AS one')).toEqual([{ one: 1 }]);
        });
        expect(await countRuns(t.schema)).toBe(0);
        // the same database through another DataSource (this test's own) is joined, also when what the
        // module knew of its own database is out of date (its server restarted since): asked again
        const known = t.get(DurableConnection) as unknown as { ownDatabase: { name: string; id: string } };
        known.ownDatabase = { ...known.ownDatabase, id: `${known.ownDatabase.name} 0` };
        await ds.transaction(async (manager) => expect((await durable.start('start_echo', {}, { manager })).outcome).toBe('created'));
        expect(await countRuns(t.schema)).toBe(1);
      } finally {
        await other.destroy();
        await sql(`DROP DATABASE ${name} WITH (FORCE)`);
      }
    });

    it('a refused start inside the transaction does not poison it', async () => {
      await ds.transaction(async (manager) => {
        await expect(durable.start('start_echo', {}, { manager, key: '' })).rejects.toBeInstanceOf(DurableValidationError);
        await manager.query(`insert into "${t.schema}".articles (title) values ('still fine')`);
      });
      expect(await ds.query(`select title from "${t.schema}".articles`)).toEqual([{ title: 'still fine' }]);
    });
  });
});
