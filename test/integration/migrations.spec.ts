import { DataSource, type MigrationInterface, type QueryRunner } from 'typeorm';
import { durableMigrations } from '../../migrations';
import { RunContext, Step, Workflow } from '../../src';
import { createApp, databaseUrl, freshSchema, spawnNode, sql, tableExists } from '../support';
import { forceStatus } from '../support/keys';

@Workflow('migrations_echo')
class Echo {
  @Step()
  async echo(ctx: RunContext<string>) {
    return ctx.input;
  }
}

/** The definitions of the indexes on `runs`, by name. */
async function runsIndexes(schema: string): Promise<Map<string, string>> {
  const rows = await sql<{ indexname: string; indexdef: string }>(`select indexname, indexdef from pg_indexes where schemaname = $1 and tablename = 'runs'`, [
    schema,
  ]);
  return new Map(rows.map((r) => [r.indexname, r.indexdef]));
}

/**
 * Applies the migrations after `all[at]` (the module's code needs the newest schema to run on the
 * upgraded one); resolves with what reverts them, newest first.
 */
async function upLater(all: (new () => MigrationInterface)[], at: number, runner: QueryRunner): Promise<() => Promise<void>> {
  const later = all.slice(at + 1);
  for (const M of later) await new M().up(runner);
  return async () => {
    for (const M of [...later].reverse()) await new M().down(runner);
  };
}

async function migrationRows(schema: string): Promise<{ name: string }[]> {
  return sql(`select name from "${schema}".migrations order by name`);
}

describe('migrations', () => {
  it('migrationsRun (the default) creates the schema and its tables and records each migration', async () => {
    const schema = freshSchema();
    expect(await tableExists(schema, 'runs')).toBe(false);
    const { durable } = await createApp({ schema, workflows: [Echo] });
    for (const table of ['runs', 'nodes', 'memos', 'migrations']) expect(await tableExists(schema, table)).toBe(true);
    const rows = await migrationRows(schema);
    expect(rows.length).toBeGreaterThanOrEqual(1);
    expect(new Set(rows.map((r) => r.name)).size).toBe(rows.length);
    // the key invariant is a database rule: the partial unique index runs_key, whose third column is
    // true for a key's holder and NULL for its other runs (NULLs never collide)
    const idx = [...(await runsIndexes(schema)).values()];
    expect(idx.filter((def) => /\(workflow, key/.test(def)).map((def) => def.replace(/ ON .*USING btree/, ''))).toEqual(
      expect.arrayContaining(['CREATE UNIQUE INDEX runs_key (workflow, key, ((holds_key OR NULL::boolean))) WHERE (key IS NOT NULL)']),
    );
    const S = `"${schema}"`;
    const insert = (holds: boolean) =>
      sql(`insert into ${S}.runs (id, workflow, key, holds_key) values (gen_random_uuid(), 'migrations_echo', 'k', $1)`, [holds]);
    await insert(true);
    await insert(false);
    await insert(false);
    await expect(insert(true)).rejects.toMatchObject({ code: '23505', constraint: 'runs_key' });
    const { runId } = await durable.start('migrations_echo', 'hi');
    expect((await durable.waitForRun(runId, { timeout: 10_000 })).result).toBe('hi');
  });

  it('booting again on a migrated schema applies nothing twice', async () => {
    const schema = freshSchema();
    const first = await createApp({ schema, workflows: [Echo] });
    const before = await migrationRows(schema);
    await first.close();
    await createApp({ schema, workflows: [Echo] });
    expect(await migrationRows(schema)).toEqual(before);
  });

  it('migrations are re-runnable: with their records deleted, a boot applies them all again over the existing tables', async () => {
    const schema = freshSchema();
    const first = await createApp({ schema, workflows: [Echo] });
    const { runId } = await first.durable.start('migrations_echo', 'kept');
    await first.durable.waitForRun(runId, { timeout: 10_000 });
    await first.close();
    const before = await migrationRows(schema);
    await sql(`delete from "${schema}".migrations`);
    const second = await createApp({ schema, workflows: [Echo] });
    expect(await migrationRows(schema)).toEqual(before);
    // the data survived, and the module works
    expect((await second.durable.getRun(runId))!.result).toBe('kept');
    const again = await second.durable.start('migrations_echo', 'again');
    expect((await second.durable.waitForRun(again.runId, { timeout: 10_000 })).result).toBe('again');
  });

  it("the exported migration classes run under the app's own TypeORM runner (migrationsRun: false)", async () => {
    const schema = freshSchema();
    const ds = new DataSource({
      type: 'postgres',
      url: databaseUrl(),
      migrations: durableMigrations(schema),
      migrationsTableName: `typeorm_migrations_${schema}`,
    });
    await ds.initialize();
    try {
      const applied = await ds.runMigrations();
      expect(applied.length).toBeGreaterThanOrEqual(1);
      expect(await tableExists(schema, 'runs')).toBe(true);
      const { durable } = await createApp({ schema, workflows: [Echo], options: { migrationsRun: false } });
      const { runId } = await durable.start('migrations_echo', 'own runner');
      expect((await durable.waitForRun(runId, { timeout: 10_000 })).result).toBe('own runner');
    } finally {
      await ds.query(`drop table if exists "typeorm_migrations_${schema}"`).catch(() => undefined);
      await ds.destroy();
    }
  });

  it('upgrading a schema with keyed history to the single key index keeps every holder and its key rule (DurableKeyIndex)', async () => {
    const schema = freshSchema();
    const S = `"${schema}"`;
    const all = durableMigrations(schema);
    const at = all.findIndex((M) => M.name.startsWith('DurableKeyIndex'));
    const [keyIndex, earlier] = [all[at], all.slice(0, at)];
    const ds = new DataSource({ type: 'postgres', url: databaseUrl() });
    await ds.initialize();
    const runner = ds.createQueryRunner();
    try {
      for (const M of earlier) await new M().up(runner);
      // history before the upgrade: per key one holder and older runs that let the key go
      const insert = (key: string, holds: boolean) =>
        sql(`insert into ${S}.runs (id, workflow, key, holds_key, status) values (gen_random_uuid(), 'migrations_echo', $1, $2, $3) returning id`, [
          key,
          holds,
          holds ? 'pending' : 'completed',
        ]);
      const holders: string[] = [];
      for (const key of ['a', 'b']) {
        for (let i = 0; i < 3; i++) await insert(key, false);
        holders.push((await insert(key, true))[0].id);
      }
      await new keyIndex().up(runner);
      const idx = [...(await runsIndexes(schema)).keys()];
      expect(idx).toEqual(expect.arrayContaining(['runs_key']));
      expect(idx).not.toEqual(expect.arrayContaining(['runs_key_holder']));
      expect(idx).not.toEqual(expect.arrayContaining(['runs_by_key']));
      await expect(insert('a', true)).rejects.toMatchObject({ code: '23505', constraint: 'runs_key' });
      // the module on the upgraded schema (with the migrations after it: the code needs their columns)
      // answers a duplicate with the holder from before
      const revertLater = await upLater(all, at, runner);
      const { durable } = await createApp({ schema, workflows: [Echo], options: { migrationsRun: false, worker: false } });
      expect(await durable.start('migrations_echo', 'again', { key: 'b' })).toEqual({ runId: holders[1], outcome: 'useExisting' });
      expect((await durable.listRuns({ workflow: 'migrations_echo', key: 'a' })).filter((r) => r.holdsKey).map((r) => r.id)).toEqual([holders[0]]);
      // and down restores the two indexes it replaced
      await revertLater();
      await new keyIndex().down(runner);
      const back = [...(await runsIndexes(schema)).keys()];
      expect(back).toEqual(expect.arrayContaining(['runs_key_holder', 'runs_by_key']));
      expect(back).not.toEqual(expect.arrayContaining(['runs_key']));
    } finally {
      await runner.release();
      await ds.destroy();
    }
  });

  it("the workflow/status index leaves out pending and running runs; down brings back the index on every run and the runs' last attempts to step_attempts (DurableLeanHistory)", async () => {
    const schema = freshSchema();
    const all = durableMigrations(schema);
    const at = all.findIndex((M) => M.name.startsWith('DurableLeanHistory'));
    const ds = new DataSource({ type: 'postgres', url: databaseUrl() });
    await ds.initialize();
    const runner = ds.createQueryRunner();
    try {
      for (const M of all.slice(0, at + 1)) await new M().up(runner);
      const idx = await runsIndexes(schema);
      expect(idx.get('runs_workflow_status_other')).toMatch(/\(workflow, status, id\) WHERE \(status <> ALL \(ARRAY\['pending'::text, 'running'::text\]\)\)$/);
      expect(idx.has('runs_workflow_status')).toBe(false);
      // a finished run keeps the attempt that ended it on its row; down moves it to step_attempts
      const S = `"${schema}"`;
      const [run] =
        await sql(`insert into ${S}.runs (id, workflow, status, node_id, error, last_step, last_attempt, last_status, last_started_at, last_finished_at)
        values (gen_random_uuid(), 'migrations_echo', 'failed', 'node-a', '{"message":"boom"}', 0, 2, 'failed', now(), now()) returning id`);
      await new all[at]().down(runner);
      expect(await sql(`select run_id, step, attempt, status, error, node_id from ${S}.step_attempts`)).toEqual([
        { run_id: run.id, step: 0, attempt: 2, status: 'failed', error: { message: 'boom' }, node_id: 'node-a' },
      ]);
      const back = await runsIndexes(schema);
      expect(back.get('runs_workflow_status')).toMatch(/\(workflow, status, id\)$/);
      expect(back.has('runs_workflow_status_other')).toBe(false);
    } finally {
      await runner.release();
      await ds.destroy();
    }
  });

  it('upgrading rewrites stored duplicate outcomes to the spelling start returns, and the key trigger writes it (DurableOutcomeSpelling)', async () => {
    const schema = freshSchema();
    const S = `"${schema}"`;
    const all = durableMigrations(schema);
    const at = all.findIndex((M) => M.name.startsWith('DurableOutcomeSpelling'));
    const [spelling, earlier] = [all[at], all.slice(0, at)];
    const ds = new DataSource({ type: 'postgres', url: databaseUrl() });
    await ds.initialize();
    const runner = ds.createQueryRunner();
    try {
      for (const M of earlier) await new M().up(runner);
      // records as earlier versions wrote them, and one of another kind whose details merely look alike
      const old: [string, string, string][] = [
        ['key_duplicate', 'outcome', 'use_existing'],
        ['key_duplicate', 'outcome', 'cancel_existing'],
        ['key_duplicate', 'outcome', 'run_again'],
        ['key_duplicate', 'outcome', 'send_event'],
        ['key_duplicate', 'outcome', 'error'],
        ['key_duplicate', 'outcome', 'debounced'],
        ['key_handed_off', 'via', 'cancel_existing'],
        ['key_handed_off', 'via', 'run_again'],
        ['key_released', 'outcome', 'use_existing'],
      ];
      for (const [kind, field, value] of old) {
        await sql(`insert into ${S}.activity (kind, run_id, workflow, key, details) values ($1, gen_random_uuid(), 'migrations_echo', 'k', $2)`, [
          kind,
          { [field]: value, key: 'k' },
        ]);
      }
      const stored = async () =>
        (await sql<{ kind: string; details: Record<string, unknown> }>(`select kind, details from ${S}.activity order by id`)).map((r) => [r.kind, r.details]);
      await new spelling().up(runner);
      expect(await stored()).toEqual([
        ['key_duplicate', { outcome: 'useExisting', key: 'k' }],
        ['key_duplicate', { outcome: 'cancelExisting', key: 'k' }],
        ['key_duplicate', { outcome: 'runAgain', key: 'k' }],
        ['key_duplicate', { outcome: 'sendEvent', key: 'k' }],
        ['key_duplicate', { outcome: 'error', key: 'k' }],
        ['key_duplicate', { outcome: 'debounced', key: 'k' }],
        ['key_handed_off', { via: 'cancelExisting', key: 'k' }],
        ['key_handed_off', { via: 'runAgain', key: 'k' }],
        ['key_released', { outcome: 'use_existing', key: 'k' }],
      ]);
      // the module on the upgraded schema: keyStats counts the old records under the new keys, and
      // a runAgain hand-off by the trigger is recorded with the same spelling
      const revertLater = await upLater(all, at, runner);
      const { durable } = await createApp({ schema, workflows: [Echo], options: { migrationsRun: false, worker: false } });
      expect((await durable.keyStats({ workflow: 'migrations_echo' })).readdsByOutcome).toEqual({
        useExisting: 1,
        cancelExisting: 1,
        runAgain: 1,
        sendEvent: 1,
        error: 1,
        debounced: 1,
      });
      const holder = await durable.start('migrations_echo', 'a', { key: 'h' });
      await forceStatus(schema, holder.runId, 'running'); // picked up: a runAgain start waits behind it
      const waiter = await durable.start('migrations_echo', 'b', { key: 'h', onDuplicate: 'runAgain' });
      await forceStatus(schema, holder.runId, 'completed');
      // the trigger hands the key over in the statement that ends the holder
      expect(await durable.listActivity({ kinds: ['key_handed_off'], key: 'h' })).toMatchObject([
        { runId: waiter.runId, details: { via: 'runAgain', from: holder.runId } },
      ]);
      // and down spells the records back
      await revertLater();
      await new spelling().down(runner);
      const back = await stored();
      expect(back.slice(0, old.length)).toEqual(old.map(([kind, field, value]) => [kind, { [field]: value, key: 'k' }]));
      expect(back.slice(old.length)).toEqual([
        ['key_duplicate', expect.objectContaining({ outcome: 'run_again', waitingRunId: waiter.runId })],
        ['key_handed_off', expect.objectContaining({ via: 'run_again', from: holder.runId })],
      ]);
    } finally {
      await runner.release();
      await ds.destroy();
    }
  });

  it('10 nodes (processes) booting at once on a fresh schema all start, and each migration is recorded once', async () => {
    // the reference: what one node records
    const reference = freshSchema();
    await createApp({ schema: reference, workflows: [Echo], options: { worker: false } });
    const expected = await migrationRows(reference);

    const schema = freshSchema();
    const nodes = await Promise.all(
      Array.from({ length: 10 }, (_, i) => spawnNode({ schema, nodeId: `boot-${i}`, env: { DURABLE_WORKER: i % 2 ? '0' : '1' }, waitReady: false })),
    );
    // ten Nest processes booting at once on two cores: slow when the machine is busy, hence the long wait
    const lines = await Promise.all(nodes.map((n) => n.waitForLine(/^(READY|BOOT_FAILED)\b/, 120_000)));
    expect(lines.filter((l) => !l.startsWith('READY'))).toEqual([]);
    expect(await migrationRows(schema)).toEqual(expected);
    // and the cluster works: a start is run by one of the worker nodes
    nodes[1].send('start barrier {}');
    const started = await nodes[1].waitForLine(/^(STARTED|ERROR)\b/);
    expect(started).toMatch(/^STARTED /);
    const runId = started.split(' ')[1];
    const observer = await createApp({ schema, workflows: [Echo], options: { worker: false } });
    // the observer does not know `barrier`, but getRun/waitForRun work on any run id
    const run = await observer.durable.waitForRun(runId, { timeout: 15_000 });
    expect(run.status).toBe('completed');
  }, 180_000);
});
