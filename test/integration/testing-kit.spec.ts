/**
 * The testing kit (`nestjs-durable/testing`): time skipping moves every not-yet-due time so that a
 * workflow with a one-hour sleep and a ten-minute retry back-off completes at once; envs are
 * isolated from each other; close() drops the env's schema. testing-kit-time.spec.ts runs beside
 * this file in another jest worker.
 */
import { Injectable } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { Column, DataSource, Entity, PrimaryColumn } from 'typeorm';
import { DurableValidationError, RunContext, Step, Workflow } from '../../src';
import { DurableTestEnv, testDatabaseUrl } from '../../src/testing';
import { sql } from '../support';

/** An entity of the app's, in the app's own DataSource. */
@Entity({ name: 'kit_notes' })
class KitNote {
  @PrimaryColumn('uuid')
  runId!: string;

  @Column('text')
  text!: string;
}

@Workflow('kit_note_taker')
class NoteTaker {
  @Step()
  async note(ctx: RunContext<{ text: string }>) {
    await ctx.transaction((manager) => manager.insert(KitNote, { runId: ctx.runId, text: ctx.input.text }));
  }
}

@Injectable()
class Attempts {
  charge = 0;
}

@Workflow('kit_sleepy')
class Sleepy {
  constructor(private readonly attempts: Attempts) {}

  @Step()
  async nap(ctx: RunContext) {
    await ctx.sleep('1h');
  }

  @Step({ retry: { attempts: 2, backoff: 'fixed', initialDelay: '10m', maxDelay: '1h', jitter: false } })
  async charge() {
    if (++this.attempts.charge === 1) throw new Error('card declined');
    return 'charged';
  }
}

@Workflow('kit_echo')
class Echo {
  @Step()
  async echo(ctx: RunContext<{ n: number }>) {
    return ctx.input.n;
  }
}

const envs: DurableTestEnv[] = [];
async function env(providers: unknown[]): Promise<DurableTestEnv> {
  const e = await DurableTestEnv.create({ providers: providers as never });
  envs.push(e);
  return e;
}

afterEach(async () => {
  await Promise.all(envs.splice(0).map((e) => e.close()));
});

/** The run's row in the env's schema (times the library does not expose). */
async function row(e: DurableTestEnv, id: string) {
  const [r] = await sql(`SELECT status, run_at, wake_at, now() AS now FROM "${e.schema}".runs WHERE id = $1`, [id]);
  return r as { status: string; run_at: Date; wake_at: Date | null; now: Date };
}

describe('DurableTestEnv', () => {
  it('a sleep of 1h and a 10-minute retry back-off complete without waiting for either', async () => {
    const e = await env([Sleepy, Attempts]);
    const { runId } = await e.durable.start(Sleepy);

    await e.runUntilIdle();
    const asleep = await row(e, runId);
    expect(asleep.status).toBe('waiting');
    expect(asleep.wake_at!.getTime() - asleep.now.getTime()).toBeGreaterThan(59 * 60_000);

    await e.skipTime('1h');
    await e.runUntilIdle();
    const backingOff = await row(e, runId);
    expect(backingOff.status).toBe('pending'); // the first charge failed, the next is 10 minutes away
    expect(e.app.get(Attempts).charge).toBe(1);
    expect(backingOff.run_at.getTime() - backingOff.now.getTime()).toBeGreaterThan(9 * 60_000);

    await e.skipTime('10m');
    await e.runUntilIdle();
    const run = await e.durable.getRun(runId);
    expect(run).toMatchObject({ status: 'completed', result: 'charged', attempt: 2 });
    expect(e.app.get(Attempts).charge).toBe(2);
  });

  it('two envs do not see each other’s runs', async () => {
    const [a, b] = await Promise.all([env([Echo]), env([Echo])]);
    expect(a.schema).not.toBe(b.schema);
    const { runId } = await a.durable.start(Echo, { n: 1 });
    await a.runUntilIdle();
    expect((await a.durable.getRun(runId))?.status).toBe('completed');
    expect(await b.durable.getRun(runId)).toBeNull();
    expect(await b.durable.listRuns({ workflow: Echo })).toEqual([]);
  });

  it('close() stops the app and drops its schema', async () => {
    const e = await DurableTestEnv.create({ providers: [Echo] });
    await e.durable.start(Echo, { n: 2 });
    await e.runUntilIdle();
    expect(await sql(`SELECT 1 FROM information_schema.schemata WHERE schema_name = $1`, [e.schema])).toHaveLength(1);
    await e.close();
    expect(await sql(`SELECT 1 FROM information_schema.schemata WHERE schema_name = $1`, [e.schema])).toHaveLength(0);
    await e.close(); // a second close is a no-op
  });

  it('providers are overridden with configure', async () => {
    const fake = { charge: 1 }; // the first charge is taken: the next one succeeds
    const e = await DurableTestEnv.create({ providers: [Sleepy, Attempts], configure: (b) => b.overrideProvider(Attempts).useValue(fake) });
    envs.push(e);
    const { runId } = await e.durable.start(Sleepy);
    await e.runUntilIdle();
    await e.skipTime('1h');
    await e.runUntilIdle();
    expect(await e.durable.getRun(runId)).toMatchObject({ status: 'completed', attempt: 1 });
    expect(fake.charge).toBe(2);
  });

  it('refuses a duration that is not more than 0 before moving anything', async () => {
    const e = await env([Sleepy, Attempts]);
    const { runId } = await e.durable.start(Sleepy);
    await e.runUntilIdle();
    const before = await row(e, runId);
    await expect(e.skipTime(0)).rejects.toBeInstanceOf(DurableValidationError);
    await expect(e.skipTime('soon')).rejects.toBeInstanceOf(DurableValidationError);
    expect((await row(e, runId)).wake_at).toEqual(before.wake_at);
  });

  it("with the app's DataSource, a step's ctx.transaction writes the app's entities", async () => {
    const e = await DurableTestEnv.create({
      imports: [
        TypeOrmModule.forRootAsync({
          useFactory: async () => ({ type: 'postgres' as const, url: await testDatabaseUrl(), entities: [KitNote], synchronize: true }),
        }),
      ],
      dataSource: DataSource,
      providers: [NoteTaker],
    });
    envs.push(e);
    const { runId } = await e.durable.start(NoteTaker, { text: 'kept' });
    await e.runUntilIdle();
    expect(await e.durable.getRun(runId)).toMatchObject({ status: 'completed' });
    expect(await sql(`SELECT text FROM kit_notes WHERE "runId" = $1`, [runId])).toEqual([{ text: 'kept' }]);
    // the env's runs are in its own schema all the same
    expect(await sql(`SELECT count(*)::int AS n FROM "${e.schema}".runs WHERE id = $1`, [runId])).toEqual([{ n: 1 }]);
    await sql(`DELETE FROM kit_notes WHERE "runId" = $1`, [runId]);
  });

  it('refuses misspelt options of create and runUntilIdle by name', async () => {
    await expect(DurableTestEnv.create({ provders: [] } as never)).rejects.toThrow(
      /^DurableTestEnv\.create: unknown option "provders" \(did you mean "providers"\?\)/,
    );
    const e = await env([Sleepy, Attempts]);
    await expect(e.runUntilIdle({ timout: '1s' } as never)).rejects.toBeInstanceOf(DurableValidationError);
  });

  it('refuses a value where the options of create or runUntilIdle go; null options are none', async () => {
    await expect(DurableTestEnv.create([Sleepy] as never)).rejects.toThrow(
      /^DurableTestEnv\.create: options must be an object of options \(imports, providers/,
    );
    const e = await DurableTestEnv.create(null as never);
    envs.push(e);
    for (const options of ['5s', 5_000]) {
      const err = await e.runUntilIdle(options as never).catch((x: Error) => x);
      expect(err).toBeInstanceOf(DurableValidationError);
      expect((err as Error).message).toMatch(/^runUntilIdle: options must be an object of options \(timeout\)/);
    }
    await expect(e.runUntilIdle(null as never)).resolves.toBeUndefined();
  });

  it('refuses create options of the wrong type by name, before building an app', async () => {
    for (const [options, name] of [
      [{ providers: Sleepy }, 'providers'],
      [{ imports: 5 }, 'imports'],
      [{ worker: 5 }, 'worker'],
      [{ worker: true }, 'worker'],
      [{ configure: 'x' }, 'configure'],
    ] as const) {
      const err = await DurableTestEnv.create(options as never).then(
        (made) => (envs.push(made), undefined),
        (x: unknown) => x,
      );
      expect(err).toBeInstanceOf(DurableValidationError);
      expect((err as DurableValidationError).errors.map((p) => p.property)).toEqual([name]);
    }
  });
});
