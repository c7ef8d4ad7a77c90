import { EntityManager } from 'typeorm';
import { RunContext, Step, Workflow } from '../../src';
import { createApp, sql, TestApp } from '../support';

interface Fact {
  runId: string;
  workflow: string;
  key: string | null | undefined;
  input: unknown;
  attempt: number;
  stepName: string;
  seen?: unknown;
}
const facts: Fact[] = [];
let schema = '';

function record(ctx: RunContext<unknown>, seen?: unknown) {
  facts.push({
    runId: ctx.runId,
    workflow: ctx.workflow,
    key: ctx.key,
    input: ctx.input,
    attempt: ctx.attempt,
    stepName: ctx.stepName,
    seen,
  });
}

@Workflow('ctx_facts', { retry: { attempts: 3, initialDelay: '50ms', backoff: 'fixed' } })
class Facts {
  @Step()
  async first(ctx: RunContext<{ x: number }>) {
    record(ctx);
    ctx.put('counter', 1);
    ctx.put('obj', { nested: [1, 2, { deep: 'yes' }] });
  }

  @Step()
  async second(ctx: RunContext<{ x: number }>) {
    record(ctx, { counter: ctx.get('counter'), obj: ctx.get('obj'), missing: ctx.get('missing') ?? null });
    ctx.put('counter', ctx.get<number>('counter')! + 1);
    if (ctx.attempt === 1) throw new Error('first attempt of second fails');
  }

  @Step()
  async third(ctx: RunContext<{ x: number }>) {
    await ctx.heartbeat(); // renews the lease; does not throw for a live run
    record(ctx, { counter: ctx.get('counter') });
    return { counter: ctx.get('counter') };
  }
}

@Workflow('ctx_tx', { retry: { attempts: 3, initialDelay: '50ms', backoff: 'fixed' } })
class Tx {
  @Step()
  async write(ctx: RunContext<{ label: string }>) {
    const first = await ctx.transaction(async (m: EntityManager) => {
      const rows = await m.query(`insert into "${schema}".effects (run_id, label) values ($1, $2) returning id`, [ctx.runId, `${ctx.input.label}-a`]);
      return { id: rows[0].id as number, attempt: ctx.attempt };
    });
    const second = await ctx.transaction(async (m: EntityManager) => {
      const rows = await m.query(`insert into "${schema}".effects (run_id, label) values ($1, $2) returning id`, [ctx.runId, `${ctx.input.label}-b`]);
      return rows[0].id as number;
    });
    record(ctx, { first, second });
    if (ctx.attempt < 3) throw new Error(`attempt ${ctx.attempt} fails after its transactions`);
    return { first, second };
  }
}

@Workflow('ctx_tx_rollback', { retry: { attempts: 2, initialDelay: '50ms', backoff: 'fixed' } })
class TxRollback {
  @Step()
  async write(ctx: RunContext) {
    const id = await ctx.transaction(async (m: EntityManager) => {
      const rows = await m.query(`insert into "${schema}".effects (run_id, label) values ($1, $2) returning id`, [ctx.runId, `attempt-${ctx.attempt}`]);
      if (ctx.attempt === 1) throw new Error('fn fails: its transaction rolls back and nothing is memoised');
      return rows[0].id as number;
    });
    return { id };
  }
}

@Workflow('ctx_tx_values', { retry: { attempts: 2, initialDelay: '50ms', backoff: 'fixed' } })
class TxValues {
  @Step()
  async write(ctx: RunContext) {
    const value = await ctx.transaction(async () => ({ at: new Date(0), gone: undefined, kept: 1 }));
    const nothing = await ctx.transaction(async () => undefined);
    record(ctx, { at: value.at instanceof Date ? 'a Date' : value.at, keys: Object.keys(value), nothing });
    if (ctx.attempt === 1) throw new Error('again: the second attempt reads the recorded values');
  }
}

describe('RunContext', () => {
  let t: TestApp;
  beforeEach(async () => {
    facts.length = 0;
    t = await createApp({ workflows: [Facts, Tx, TxRollback, TxValues] });
    schema = t.schema;
    await sql(`create table "${schema}".effects (id serial primary key, run_id uuid not null, label text not null)`);
  });

  it('exposes runId, workflow, key, input, attempt and stepName; get/put persist across steps and retries', async () => {
    const { runId } = await t.durable.start('ctx_facts', { x: 7 }, { key: 'ctx-key' });
    const run = await t.durable.waitForRun(runId, { timeout: 10_000 });
    expect(run.status).toBe('completed');
    const base = { runId, workflow: 'ctx_facts', key: 'ctx-key', input: { x: 7 } };
    expect(facts.map(({ seen, ...f }) => f)).toEqual([
      { ...base, attempt: 1, stepName: 'first' },
      { ...base, attempt: 1, stepName: 'second' },
      { ...base, attempt: 2, stepName: 'second' },
      { ...base, attempt: 1, stepName: 'third' },
    ]);
    // step one's context is visible in step two, on both attempts
    const ctxSeen = { counter: 1, obj: { nested: [1, 2, { deep: 'yes' }] }, missing: null };
    expect(facts[1].seen).toEqual(ctxSeen);
    expect(facts[2].seen).toEqual(ctxSeen);
    // the completed second attempt's put is what step three sees
    expect(facts[3].seen).toEqual({ counter: 2 });
    expect(run.result).toEqual({ counter: 2 });
    expect(run.context).toMatchObject({ counter: 2, obj: { nested: [1, 2, { deep: 'yes' }] } });
  });

  it('ctx.key is null for a run without a key', async () => {
    const { runId } = await t.durable.start('ctx_facts', { x: 1 });
    await t.durable.waitForRun(runId, { timeout: 10_000 });
    expect(facts[0].key ?? null).toBeNull();
  });

  it('ctx.transaction is memoised per (run, step, call): writes happen once although the step runs three times', async () => {
    const { runId } = await t.durable.start('ctx_tx', { label: 'L' });
    const run = await t.durable.waitForRun(runId, { timeout: 15_000 });
    expect(run.status).toBe('completed');
    expect(facts.map((f) => f.attempt)).toEqual([1, 2, 3]);
    const rows = await sql(`select id, label from "${schema}".effects where run_id = $1 order by id`, [runId]);
    expect(rows.map((r) => r.label)).toEqual(['L-a', 'L-b']);
    // later attempts got the recorded results back (including the attempt number recorded on attempt 1)
    const firstSeen = facts[0].seen as { first: { id: number; attempt: number }; second: number };
    expect(firstSeen.first).toEqual({ id: rows[0].id, attempt: 1 });
    expect(firstSeen.second).toBe(rows[1].id);
    for (const f of facts) expect(f.seen).toEqual(firstSeen);
    expect(run.result).toEqual(firstSeen);
  });

  it('ctx.transaction returns its value as recorded (JSON) on the first run too: the same value before and after a replay', async () => {
    const { runId } = await t.durable.start('ctx_tx_values');
    expect((await t.durable.waitForRun(runId, { timeout: 15_000 })).status).toBe('completed');
    const seen = { at: '1970-01-01T00:00:00.000Z', keys: ['at', 'kept'], nothing: null };
    expect(facts.map((f) => [f.attempt, f.seen])).toEqual([
      [1, seen],
      [2, seen],
    ]);
  });

  it('ctx.transaction whose fn throws rolls back and is not memoised: the next attempt runs fn again', async () => {
    const { runId } = await t.durable.start('ctx_tx_rollback');
    const run = await t.durable.waitForRun(runId, { timeout: 15_000 });
    expect(run.status).toBe('completed');
    const rows = await sql(`select id, label from "${schema}".effects where run_id = $1`, [runId]);
    expect(rows.map((r) => r.label)).toEqual(['attempt-2']);
    expect(run.result).toEqual({ id: rows[0].id });
  });

  it('memoisation is per run: two runs of the same workflow each write once', async () => {
    const a = await t.durable.start('ctx_tx', { label: 'A' });
    const b = await t.durable.start('ctx_tx', { label: 'B' });
    await t.durable.waitForRun(a.runId, { timeout: 15_000 });
    await t.durable.waitForRun(b.runId, { timeout: 15_000 });
    const rows = await sql(`select label from "${schema}".effects order by label`);
    expect(rows.map((r) => r.label)).toEqual(['A-a', 'A-b', 'B-a', 'B-b']);
  });
});
