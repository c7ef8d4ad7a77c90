import { Module } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { DurableModule, Step, Workflow, RunContext } from '../../src';
import { createApp, databaseUrl, freshSchema, testOptions } from '../support';

@Workflow('options_echo')
class Echo {
  @Step()
  async echo(ctx: RunContext<{ n: number }>) {
    return { n: ctx.input.n * 2 };
  }
}

/** Boots with `options` merged over the test defaults and expects startup to fail naming `name`. */
async function expectStartupFailure(options: Record<string, unknown>, name: RegExp, asAsync = false) {
  const schema = freshSchema();
  const opts = { ...testOptions({ schema }), ...options };
  for (const k of Object.keys(opts)) if (opts[k] === undefined) delete opts[k];
  const durableModule = asAsync ? DurableModule.forRootAsync({ useFactory: () => opts as never }) : DurableModule.forRoot(opts as never);
  let error: unknown;
  try {
    await createApp({ workflows: [Echo], durableModule });
  } catch (err) {
    error = err;
  }
  expect(error).toBeInstanceOf(Error);
  expect(String((error as Error).message)).toMatch(name);
}

describe('DurableModule options', () => {
  describe('are validated at startup, naming the bad option', () => {
    it('a misspelt option (heartbeatIntervall, worker.concurency) is refused by name', async () => {
      await expectStartupFailure({ heartbeatIntervall: '1s' }, /heartbeatIntervall/);
      await expectStartupFailure({ worker: { concurency: 4 } }, /concurency/);
    });

    it('worker.workflows naming no registered workflow', async () => {
      await expectStartupFailure({ worker: { workflows: ['options_echo', 'options_ecoh'] } }, /worker\.workflows.*options_ecoh/);
    });

    it('worker.concurrency: 0', async () => {
      await expectStartupFailure({ worker: { concurrency: 0, pollInterval: '100ms' } }, /concurrency/);
    });

    it('worker.concurrency: 1.5 and negative', async () => {
      await expectStartupFailure({ worker: { concurrency: 1.5 } }, /concurrency/);
      await expectStartupFailure({ worker: { concurrency: -3 } }, /concurrency/);
    });

    it("heartbeatInterval: 'abc'", async () => {
      await expectStartupFailure({ heartbeatInterval: 'abc' }, /heartbeatInterval/);
    });

    it('nodeTimeout, pollInterval, shutdownTimeout and retention.runs that are not durations', async () => {
      await expectStartupFailure({ nodeTimeout: 'soon' }, /nodeTimeout/);
      await expectStartupFailure({ worker: { pollInterval: '5 parsecs' } }, /pollInterval/);
      await expectStartupFailure({ shutdownTimeout: -1 }, /shutdownTimeout/);
      await expectStartupFailure({ retention: { runs: 'forever' } }, /runs/);
    });

    it('durations kept as times in the database past 100 years (retention, a debounce, a retry back-off, a rate-limit period)', async () => {
      await expectStartupFailure({ retention: { runs: '36501d' } }, /runs must be a duration .* at most 3153600000000ms/);
      await expectStartupFailure({ retention: { activity: 1e15 } }, /activity must be a duration/);
      @Workflow('options_far_debounce', { debounce: { period: '36501d' } })
      class FarDebounce {
        @Step()
        async s() {}
      }
      @Workflow('options_far_retry', { retry: { maxDelay: '36501d' } })
      class FarRetry {
        @Step()
        async s() {}
      }
      @Workflow('options_far_rate', { rateLimit: { limit: 1, period: '36501d' } })
      class FarRate {
        @Step()
        async s() {}
      }
      await expect(createApp({ workflows: [FarDebounce] })).rejects.toThrow(/debounce\.period must be at most 3153600000000ms/);
      await expect(createApp({ workflows: [FarRetry] })).rejects.toThrow(/retry\.maxDelay must be at most 3153600000000ms/);
      await expect(createApp({ workflows: [FarRate] })).rejects.toThrow(/rateLimit\.period must be at most 3153600000000ms/);
    });

    it('a statementTimeout at the longest a timer can wait boots and runs (the client waits within a timer too)', async () => {
      const t = await createApp({ workflows: [Echo], options: { statementTimeout: 2_147_483_647 } });
      const { runId } = await t.durable.start(Echo, { n: 2 });
      expect((await t.durable.waitForRun(runId, { timeout: 10_000 })).result).toEqual({ n: 4 });
    });

    it("activityCommit that is not 'synchronous' or 'asynchronous'", async () => {
      await expectStartupFailure({ activityCommit: 'off' }, /activityCommit/);
    });

    it('schema that is not an identifier', async () => {
      await expectStartupFailure({ schema: 'bad schema"; drop table x; --' }, /schema/);
    });

    it('migrationsRun that is not a boolean', async () => {
      await expectStartupFailure({ migrationsRun: 'yes' }, /migrationsRun/);
    });

    it('neither url nor dataSource', async () => {
      await expectStartupFailure({ url: undefined }, /url|dataSource/);
    });

    it('both url and dataSource', async () => {
      const ds = new DataSource({ type: 'postgres', url: databaseUrl() });
      await ds.initialize();
      try {
        await expectStartupFailure({ dataSource: ds }, /url|dataSource/);
      } finally {
        await ds.destroy();
      }
    });

    it('a heartbeatInterval over half of nodeTimeout (the node would stop its runs between two beats)', async () => {
      await expectStartupFailure({ heartbeatInterval: '20s', nodeTimeout: '30s' }, /heartbeatInterval: must be at most half of nodeTimeout/);
      // against the other's default (5 s, 30 s)
      await expectStartupFailure({ heartbeatInterval: '16s', nodeTimeout: undefined }, /heartbeatInterval: must be at most half of nodeTimeout/);
      await expectStartupFailure({ heartbeatInterval: undefined, nodeTimeout: '9s' }, /heartbeatInterval: must be at most half of nodeTimeout/);
    });

    it('but not for an app without a worker (it never beats; the CLI passes only nodeTimeout)', async () => {
      const { durable } = await createApp({ workflows: [Echo], options: { worker: false, heartbeatInterval: undefined, nodeTimeout: '2s' } });
      expect(await durable.listNodes()).toEqual([]);
    });

    it('through forRootAsync too', async () => {
      await expectStartupFailure({ worker: { concurrency: 0 } }, /concurrency/, true);
      await expectStartupFailure({ heartbeatInterval: 'abc' }, /heartbeatInterval/, true);
    });
  });

  it("accepts every Duration form: ms numbers and '500ms', '30s', '5m', '2h', '7d'", async () => {
    const { durable } = await createApp({
      workflows: [Echo],
      options: {
        heartbeatInterval: '500ms',
        nodeTimeout: '30s',
        shutdownTimeout: '5m',
        retention: { runs: '7d', activity: '2h' },
        worker: { pollInterval: 200 },
      },
    });
    const { runId } = await durable.start('options_echo', { n: 1 });
    const run = await durable.waitForRun(runId, { timeout: 10_000 });
    expect(run.status).toBe('completed');
  });

  it('works with a bare url: the module makes its own DataSource', async () => {
    const { durable } = await createApp({ workflows: [Echo] });
    const { runId, outcome } = await durable.start(Echo, { n: 21 });
    expect(outcome).toBe('created');
    const run = await durable.waitForRun(runId, { timeout: 10_000 });
    expect(run).toMatchObject({ status: 'completed', result: { n: 42 } });
  });

  it('forRootAsync resolves its options from injected providers of imported modules', async () => {
    const CONFIG = Symbol('CONFIG');
    @Module({ providers: [{ provide: CONFIG, useValue: { dbUrl: databaseUrl(), concurrency: 2 } }], exports: [CONFIG] })
    class ConfigModule {}
    const schema = freshSchema();
    const { durable } = await createApp({
      workflows: [Echo],
      schema,
      async: {
        imports: [ConfigModule],
        inject: [CONFIG],
        useFactory: (cfg: unknown) => {
          const c = cfg as { dbUrl: string; concurrency: number };
          return { ...testOptions({ schema }), url: c.dbUrl, worker: { concurrency: c.concurrency, pollInterval: '100ms' } };
        },
      },
    });
    const { runId } = await durable.start('options_echo', { n: 3 });
    expect((await durable.waitForRun(runId, { timeout: 10_000 })).result).toEqual({ n: 6 });
  });

  it("works with the app's own TypeORM DataSource passed through forRootAsync", async () => {
    const ds = new DataSource({ type: 'postgres', url: databaseUrl() });
    await ds.initialize();
    try {
      const schema = freshSchema();
      const { durable, close } = await createApp({
        workflows: [Echo],
        schema,
        async: {
          useFactory: async () => ({ ...testOptions({ schema }), url: undefined, dataSource: ds }),
        },
      });
      const { runId } = await durable.start('options_echo', { n: 5 });
      const run = await durable.waitForRun(runId, { timeout: 10_000 });
      expect(run).toMatchObject({ status: 'completed', result: { n: 10 } });
      // the module's tables live in that database, in the configured schema
      const rows = await ds.query(`select status from "${schema}".runs where id = $1`, [runId]);
      expect(rows).toEqual([{ status: 'completed' }]);
      await close();
      // the app owns its DataSource: closing the Nest app must not destroy it
      expect(ds.isInitialized).toBe(true);
      await expect(ds.query('select 1 as one')).resolves.toEqual([{ one: 1 }]);
    } finally {
      if (ds.isInitialized) await ds.destroy();
    }
  });
});
