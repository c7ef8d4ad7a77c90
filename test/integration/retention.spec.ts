import { DurableValidationError, RunContext, Step, Workflow } from '../../src';
import { Client } from 'pg';
import { countRuns, createApp, databaseUrl, freshSchema, Gate, ident, sql, waitFor } from '../support';

let gate = new Gate();

@Workflow('retention_quick')
class Quick {
  @Step({ retry: { attempts: 1 } })
  async only(ctx: RunContext<{ fail?: boolean }>) {
    if (ctx.input?.fail) throw new Error('failing on purpose');
    return 'ok';
  }
}

@Workflow('retention_gated')
class Gated {
  @Step()
  async hold(ctx: RunContext) {
    await gate.wait(ctx.signal);
  }
}

describe('prune and retention', () => {
  beforeEach(() => {
    gate = new Gate();
  });
  afterEach(() => gate.open());

  it('prune({ olderThan }) deletes finished runs older than that, and nothing else', async () => {
    const { durable, schema } = await createApp({ workflows: [Quick, Gated] });
    const done = await durable.start('retention_quick', {});
    const failed = await durable.start('retention_quick', { fail: true });
    await durable.waitForRun(done.runId, { timeout: 10_000 });
    await durable.waitForRun(failed.runId, { timeout: 10_000 });
    const running = await durable.start('retention_gated');
    const pending = await durable.start('retention_gated', {}, { delay: '1h' });
    await waitFor(async () => (await durable.getRun(running.runId))?.status === 'running');

    // nothing is an hour old yet
    await expect(durable.prune({ olderThan: '1h' })).resolves.toMatchObject({ runs: 0 });
    expect(await countRuns(schema)).toBe(4);

    // finished runs older than 0ms: the two finished ones, never the running or pending ones
    const res = await durable.prune({ olderThan: 0 });
    expect(res.runs).toBe(2);
    expect(typeof res.activity).toBe('number');
    expect(await durable.getRun(done.runId)).toBeNull();
    expect(await durable.getRun(failed.runId)).toBeNull();
    expect((await durable.getRun(running.runId))!.status).toBe('running');
    expect((await durable.getRun(pending.runId))!.status).toBe('pending');

    gate.open();
    await durable.waitForRun(running.runId, { timeout: 10_000 });
    await expect(durable.prune({ olderThan: 0 })).resolves.toMatchObject({ runs: 1 });
    expect(await countRuns(schema)).toBe(1);
  });

  it('prune({ olderThan }) keeps activity younger than retention.activity, whatever the runs cutoff', async () => {
    const { durable, schema } = await createApp({ workflows: [Gated] });
    // the holder is still running when its duplicate comes
    const holder = await durable.start('retention_gated', {}, { key: 'kept' });
    expect((await durable.start('retention_gated', {}, { key: 'kept' })).outcome).toBe('useExisting');
    gate.open();
    await durable.waitForRun(holder.runId, { timeout: 10_000 });
    // and a record past the default retention.activity (7 days)
    await sql(`INSERT INTO ${ident(schema)}.activity (kind, run_id, workflow, key, details, at)
      VALUES ('key_released', gen_random_uuid(), 'retention_gated', 'old', '{}', now() - interval '8 days')`);
    expect((await durable.prune({ olderThan: 0 })).runs).toBe(1);
    expect(await durable.getRun(holder.runId)).toBeNull();
    expect(await durable.listActivity({ workflow: 'retention_gated' })).toEqual([
      expect.objectContaining({ kind: 'key_duplicate', runId: holder.runId, details: expect.objectContaining({ key: 'kept', outcome: 'useExisting' }) }),
    ]);
  });

  it('prune() without olderThan uses retention (nothing fresh is pruned); a bad olderThan is refused', async () => {
    const { durable, schema } = await createApp({ workflows: [Quick] });
    const done = await durable.start('retention_quick', {});
    await durable.waitForRun(done.runId, { timeout: 10_000 });
    await expect(durable.prune()).resolves.toMatchObject({ runs: 0 });
    await expect(durable.prune({ olderThan: 'yesterday' as never })).rejects.toBeInstanceOf(DurableValidationError);
    await expect(durable.prune({ olderThan: -1 as never })).rejects.toBeInstanceOf(DurableValidationError);
    // beyond 100 years: refused, not a database error (interval or timestamp out of range)
    for (const olderThan of [1e20, '99999999d', '36501d']) {
      const err = await durable.prune({ olderThan }).catch((e: Error) => e);
      expect(err).toBeInstanceOf(DurableValidationError);
      expect((err as Error).message).toMatch(/^prune: olderThan must be at most 3153600000000ms \(about 36500 days\)/);
    }
    await expect(durable.prune({ olderThan: '36500d' })).resolves.toEqual({ runs: 0, activity: 0 });
    expect(await countRuns(schema)).toBe(1);
  });

  it('the maintenance loop prunes finished runs past retention.runs', async () => {
    const schema = freshSchema();
    const { durable } = await createApp({
      schema,
      workflows: [Quick, Gated],
      options: { retention: { runs: '1s', activity: '1s' } },
    });
    const done = await durable.start('retention_quick', {});
    await durable.waitForRun(done.runId, { timeout: 10_000 });
    const pending = await durable.start('retention_gated', {}, { delay: '1h' });
    await waitFor(async () => (await durable.getRun(done.runId)) === null, {
      timeout: 20_000,
      message: 'the finished run is pruned by the maintenance loop',
    });
    expect((await durable.getRun(pending.runId))!.status).toBe('pending');
  });

  it('retention.runs: false keeps finished runs', async () => {
    const schema = freshSchema();
    const { durable } = await createApp({ schema, workflows: [Quick], options: { retention: { runs: false } } });
    const done = await durable.start('retention_quick', {});
    await durable.waitForRun(done.runId, { timeout: 10_000 });
    // a later run goes through several maintenance passes while it is pending, then completes
    const later = await durable.start('retention_quick', {}, { delay: '2s' });
    await durable.waitForRun(later.runId, { timeout: 10_000 });
    expect(await durable.getRun(done.runId)).not.toBeNull();
  });
  it('a finished run another transaction holds is skipped, not waited for: pruning ends and prunes the others, a later prune that one', async () => {
    // no statement timeout: a prune that waited for the row would wait as long as the transaction stays open
    const { durable, schema } = await createApp({ workflows: [Quick], options: { worker: false, statementTimeout: false } });
    const S = ident(schema);
    const [held] = await sql<{ id: string }>(`
      INSERT INTO ${S}.runs (id, workflow, status, run_at, finished_at)
      SELECT gen_random_uuid(), 'retention_quick', 'completed', now() - interval '2 hours', now() - interval '2 hours' FROM generate_series(1, 3)
      RETURNING id`);
    const holder = new Client({ connectionString: databaseUrl() });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query(`SELECT 1 FROM ${S}.runs WHERE id = $1 FOR UPDATE`, [held.id]);
      let result: { runs: number } | undefined;
      const pruning = durable.prune({ olderThan: '1h' }).then((r) => (result = r));
      // it ends while the row is still held (a prune waiting for the row shows as a lock wait)
      const waitsForLock = async () =>
        (await sql(`SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND strpos(query, $1) > 0`, [`${S}.runs`])).length > 0;
      await waitFor(async () => result !== undefined || (await waitsForLock()), { message: 'the prune ends or waits for the row' });
      expect(result).toMatchObject({ runs: 2 });
      expect(await sql(`SELECT id FROM ${S}.runs ORDER BY id`)).toEqual([{ id: held.id }]);
      await holder.query('COMMIT');
      await pruning;
      await expect(durable.prune({ olderThan: '1h' })).resolves.toMatchObject({ runs: 1 });
    } finally {
      await holder.query('ROLLBACK').catch(() => undefined);
      await holder.end();
    }
  });
});
