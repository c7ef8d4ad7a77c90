/**
 * The mistakes a newcomer makes in the first hour, each answered by a typed error with a stable
 * `code` and a message that names the cause and the fix — before anything is written.
 */
import { Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  DurableError,
  DurableModule,
  DurableService,
  DurableValidationError,
  KeyTakenError,
  NotReadyError,
  RunContext,
  Schedule,
  Step,
  UnknownWorkflowError,
  Workflow,
} from '../../src';
import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';
import { countRuns, createApp, freshSchema, ident, sql, tableExists, testOptions } from '../support';

@Workflow('m_echo')
class Echo {
  @Step()
  async echo(ctx: RunContext<{ n?: number }>) {
    return { n: ctx.input?.n ?? 0 };
  }
}

@Workflow('m_forgotten')
class Forgotten {
  @Step()
  async one() {
    return 1;
  }
}

class Plain {}

let bigintCalls = 0;
@Workflow('m_bigint', { retry: { attempts: 5, initialDelay: '10ms' } })
class ReturnsBigInt {
  @Step()
  async count() {
    bigintCalls++;
    return { n: 10n };
  }
}

@Entity('m_ghosts')
class Ghost {
  @PrimaryGeneratedColumn()
  id!: number;

  @Column({ type: 'text' })
  name!: string;
}

let ghostCalls = 0;
@Workflow('m_unknown_entity', { retry: { attempts: 4, initialDelay: '10ms' } })
class UsesUnknownEntity {
  @Step()
  async rename(ctx: RunContext) {
    ghostCalls++;
    await ctx.transaction((manager) => manager.update(Ghost, 1, { name: 'casper' }));
  }
}

let misspeltWaitCalls = 0;
@Workflow('m_misspelt_wait', { retry: { attempts: 4, initialDelay: '10ms' } })
class MisspeltWait {
  @Step()
  async ask(ctx: RunContext) {
    misspeltWaitCalls++;
    return ctx.waitForEvent('answer', { timout: '1s' } as never);
  }
}

@Workflow('m_misspelt_call', { retry: { attempts: 4, initialDelay: '10ms' } })
class MisspeltCall {
  @Step()
  async call(ctx: RunContext) {
    return ctx.callWorkflow(Echo, {}, { dealy: '1s' } as never);
  }
}

@Workflow('m_strict', { onDuplicate: 'error' })
class Strict {
  @Step()
  async one() {
    return 1;
  }
}

/** What `fn` threw or rejected with (fails when it did neither). */
async function caught(fn: () => unknown): Promise<Error> {
  try {
    await fn();
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected an error, but none was thrown');
}

/** What `fn` threw (fails when it did not throw). */
function thrown(fn: () => unknown): Error {
  try {
    fn();
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected an error, but none was thrown');
}

/** Expects a `DurableError` of `type` with `code` and a message matching every pattern. */
function expectError(err: Error, type: abstract new (...args: never[]) => DurableError, code: string, ...patterns: RegExp[]) {
  expect(err).toBeInstanceOf(type);
  expect((err as DurableError).code).toBe(code);
  for (const p of patterns) expect(err.message).toMatch(p);
}

describe('newcomer mistakes get a typed error naming the cause and the fix', () => {
  describe('wiring', () => {
    it('start (or any call) before app.init(): NotReadyError, not "unknown workflow"', async () => {
      const moduleRef = await Test.createTestingModule({
        imports: [DurableModule.forRoot(testOptions() as never)],
        providers: [Echo],
      }).compile();
      try {
        const durable = moduleRef.get(DurableService);
        const start = await caught(() => durable.start(Echo, { n: 1 }));
        expectError(start, NotReadyError, 'not_ready', /has not finished starting/, /call it after app\.init\(\)/);
        expectError(await caught(() => durable.getRun('0190a3b0-0000-7000-8000-000000000000')), NotReadyError, 'not_ready', /app\.init\(\)/);
      } finally {
        await moduleRef.close();
      }
    });

    it('a workflow class that is no provider, a class without @Workflow and an unknown name each have their own message', async () => {
      const { durable, schema } = await createApp({ workflows: [Echo] });
      expectError(
        await caught(() => durable.start(Forgotten, {})),
        UnknownWorkflowError,
        'unknown_workflow',
        /workflow class Forgotten \("m_forgotten"\) is not a provider of any module/,
        /add it to the providers of a module/,
      );
      expectError(
        await caught(() => durable.start(Plain as never, {})),
        UnknownWorkflowError,
        'unknown_workflow',
        /class Plain is not a workflow: decorate it with @Workflow/,
      );
      expectError(
        await caught(() => durable.start('m_ehco', {})),
        UnknownWorkflowError,
        'unknown_workflow',
        /unknown workflow "m_ehco": no @Workflow class of that name is a provider of this app \(registered: "m_echo"\)/,
      );
      expect(await countRuns(schema)).toBe(0);
    });

    it('two DurableModule.forRoot in one app: refused at startup, nothing migrated', async () => {
      const second = freshSchema();
      @Module({ imports: [DurableModule.forRoot(testOptions({ schema: second }) as never)] })
      class FeatureModule {}
      const first = freshSchema();
      const err = await caught(() => createApp({ schema: first, workflows: [Echo], imports: [FeatureModule] }));
      expectError(err, DurableValidationError, 'invalid', /DurableModule is registered 2 times in this app/, /import it once, in the root module/);
      expect(await tableExists(first, 'runs')).toBe(false);
      expect(await tableExists(second, 'runs')).toBe(false);
    });
  });

  describe('workflow definitions', () => {
    it('a workflow with no steps, and two workflows with one name: DurableValidationError at startup', async () => {
      @Workflow('m_empty')
      class Empty {}
      expectError(
        await caught(() => createApp({ workflows: [Empty] })),
        DurableValidationError,
        'invalid',
        /workflow "m_empty" \(Empty\) has no @Step methods: mark at least one/,
      );

      @Workflow('m_echo')
      class EchoAgain {
        @Step()
        async again() {
          return 2;
        }
      }
      expectError(
        await caught(() => createApp({ workflows: [Echo, EchoAgain] })),
        DurableValidationError,
        'invalid',
        /two workflows are named "m_echo" \(Echo and EchoAgain\): give each workflow a name of its own \(in @Workflow\(name\) or DurableWorkflow\(name\)/,
      );
    });

    it('a misspelt @Workflow option (top level, retry, debounce) throws when the class is defined', () => {
      const define = (options: object) => () => Workflow('m_typo', options as never);
      expectError(
        thrown(define({ onDuplicat: 'error' })),
        DurableValidationError,
        'invalid',
        /@Workflow\('m_typo'\): unknown option "onDuplicat" \(did you mean "onDuplicate"\?\)/,
        /the options are reuse, onDuplicate, debounce, timeout, retry/,
      );
      expect(define({ retry: { atempts: 2 } })).toThrow(/unknown option "retry\.atempts" \(did you mean "retry\.attempts"\?\)/);
      expect(define({ debounce: { period: '1s', timout: '5s' } })).toThrow(/unknown option "debounce\.timout" \(did you mean "debounce\.timeout"\?\)/);
      expect(define({ onDuplicate: 'error', retry: { attempts: 2 } })).not.toThrow();
    });

    it('a misspelt @Step option throws when the class is defined, naming the method', () => {
      const err = thrown(() => {
        class Typo {
          @Step({ retyr: { attempts: 2 } } as never)
          async one() {}
        }
        return Typo;
      });
      expectError(err, DurableValidationError, 'invalid', /@Step\(\) on Typo\.one: unknown option "retyr" \(did you mean "retry"\?\)/);
      expect(() => Step({ retry: { backof: 'fixed' } } as never)({}, 'x', {})).toThrow(/unknown option "retry\.backof" \(did you mean "retry\.backoff"\?\)/);
    });
  });

  describe('misspelt options of calls are refused before anything is written', () => {
    it('start, startMany (options and items)', async () => {
      const { durable, schema } = await createApp({ workflows: [Echo] });
      expectError(
        await caught(() => durable.start(Echo, {}, { kye: 'a' } as never)),
        DurableValidationError,
        'invalid',
        /start m_echo: unknown option "kye" \(did you mean "key"\?\)/,
      );
      expectError(
        await caught(() => durable.startMany(Echo, [{ key: 'a' }, { kye: 'b' } as never])),
        DurableValidationError,
        'invalid',
        /unknown option "items\[1\]\.kye" \(did you mean "items\[1\]\.key"\?\)/,
      );
      expectError(
        await caught(() => durable.startMany(Echo, [{ key: 'a' }], { manger: undefined } as never)),
        DurableValidationError,
        'invalid',
        /unknown option "manger" \(did you mean "manager"\?\)/,
      );
      // a key where the options go, bare values as items (plain JavaScript): refused, not started unkeyed
      expectError(
        await caught(() => durable.start(Echo, {}, 'article:42' as never)),
        DurableValidationError,
        'invalid',
        /options must be an object of options \(key, onDuplicate/,
      );
      expectError(
        await caught(() => durable.startMany(Echo, [{ key: 'a' }, 'article:42', 5] as never)),
        DurableValidationError,
        'invalid',
        /start m_echo: items\[1\] must be an object of options \(input, key, runAt, priority\)/,
      );
      expectError(await caught(() => durable.start(Echo, {}, new Date() as never)), DurableValidationError, 'invalid', /options must be an object of options/);
      expectError(await caught(() => durable.startMany(Echo, [null] as never)), DurableValidationError, 'invalid', /items\[0\] must be an object of options/);
      expect(await countRuns(schema)).toBe(0);
      // null options are no options
      expect((await durable.start(Echo, {}, null as never)).outcome).toBe('created');
    });

    it('flow, node, startFlow and appendFlow options', async () => {
      const { durable, schema } = await createApp({ workflows: [Echo] });
      expectError(
        await caught(() => durable.startFlow(durable.flow({ nmae: 'etl' } as never).add('a', Echo))),
        DurableValidationError,
        'invalid',
        /unknown option "nmae" \(did you mean "name"\?\)/,
      );
      expectError(
        await caught(() =>
          durable.startFlow(
            durable
              .flow()
              .add('a', Echo)
              .add('b', Echo, {}, { dep: ['a'] } as never),
          ),
        ),
        DurableValidationError,
        'invalid',
        /unknown option "nodes\[1\]\.dep" \(did you mean "nodes\[1\]\.deps"\?\)/,
      );
      expectError(
        await caught(() => durable.startFlow(durable.flow().add('a', Echo), { manger: undefined } as never)),
        DurableValidationError,
        'invalid',
        /unknown option "manger"/,
      );
      expect(await countRuns(schema)).toBe(0);
      const { flowId } = await durable.startFlow(durable.flow().add('a', Echo));
      expectError(
        await caught(() => durable.appendFlow(flowId, { checkDep: false } as never)),
        DurableValidationError,
        'invalid',
        /unknown option "checkDep" \(did you mean "checkDeps"\?\)/,
      );
    });

    it('cancel, rerun, releaseKey, sendEvent and waitForRun', async () => {
      const { durable } = await createApp({ workflows: [Echo] });
      const { runId } = await durable.start(Echo, {}, { key: 'k' });
      const done = await durable.waitForRun(runId, { timeout: 30_000 });
      const refusals: [() => unknown, RegExp][] = [
        [() => durable.cancel(runId, { reasn: 'x' } as never), /^cancel: unknown option "reasn" \(did you mean "reason"\?\)/],
        [() => durable.rerun(runId, { inptu: {} } as never), /^rerun: unknown option "inptu" \(did you mean "input"\?\)/],
        [() => durable.releaseKey(runId, { bye: 'ops' } as never), /^releaseKey: unknown option "bye" \(did you mean "by"\?\)/],
        [() => durable.sendEvent(runId, 'e', {}, { bufer: true } as never), /^sendEvent: unknown option "bufer" \(did you mean "buffer"\?\)/],
        [() => durable.waitForRun(runId, { timout: '1s' } as never), /^waitForRun: unknown option "timout" \(did you mean "timeout"\?\)/],
      ];
      for (const [call, message] of refusals) expectError(await caught(call), DurableValidationError, 'invalid', message);
      // nothing changed: the run still holds its key, and no other run was started
      expect(await durable.getRun(runId)).toMatchObject({ status: done.status, holdsKey: true });
      expect(await durable.listRuns({ workflow: Echo })).toHaveLength(1);
    });

    it('a value where the options go is refused (not ignored) before anything is written; null options are none', async () => {
      const { durable, schema } = await createApp({ workflows: [Echo] });
      const { runId } = await durable.start(Echo, {}, { key: 'k' });
      await durable.waitForRun(runId, { timeout: 30_000 });
      const pending = await durable.start(Echo, {}, { delay: '1h' });
      const refusals: [() => unknown, RegExp][] = [
        [() => durable.rerun(runId, 'x' as never), /^rerun: options must be an object of options \(input\)/],
        [() => durable.releaseKey(runId, 'ops@x' as never), /^releaseKey: options must be an object of options \(by\)/],
        [() => durable.waitForRun(pending.runId, 300 as never), /^waitForRun: options must be an object of options \(timeout\)/],
        [() => durable.prune('1d' as never), /^prune: options must be an object of options \(olderThan\)/],
        [() => durable.startFlow(durable.flow('my-id' as never).add('a', Echo)), /^startFlow: options must be an object of options \(id, name/],
        [
          () =>
            durable.startFlow(
              durable
                .flow()
                .add('a', Echo)
                .add('b', Echo, {}, ['a'] as never),
            ),
          /node "b": options must be an object of options \(deps/,
        ],
        [() => durable.startFlow(durable.flow().add('a', Echo), 'tx' as never), /^startFlow: options must be an object of options \(manager\)/],
      ];
      for (const [call, message] of refusals) expectError(await caught(call), DurableValidationError, 'invalid', message);
      // one line, not one per character of the string
      expect((await caught(() => durable.startFlow(durable.flow('my-id' as never).add('a', Echo)))).message).not.toMatch(/unknown option/);
      expect(await countRuns(schema)).toBe(2);
      expect(await durable.getRun(runId)).toMatchObject({ holdsKey: true });
      expect(await sql(`select 1 from ${ident(schema)}.flows`)).toEqual([]);
      const { flowId } = await durable.startFlow(durable.flow(null as never).add('a', Echo, {}, null as never), null as never);
      expectError(
        await caught(() => durable.appendFlow(flowId, 'x' as never)),
        DurableValidationError,
        'invalid',
        /^appendFlow \S+: options must be an object/,
      );
      expectError(await caught(() => durable.rerunFlow(flowId, 'a' as never)), DurableValidationError, 'invalid', /^rerunFlow \S+: options must be an object/);
      await expect(durable.appendFlow(flowId, null as never)).resolves.toBeDefined();
      // null options are no options
      await expect(durable.waitForRun(runId, null as never)).resolves.toMatchObject({ status: 'completed' });
      await expect(durable.prune(null as never)).resolves.toEqual({ runs: 0, activity: 0 });
      await durable.releaseKey(runId, null as never);
      expect(await durable.rerun(runId, null as never)).toMatchObject({ outcome: 'created' });
    });

    it('listRuns, countRuns, listKeys, listActivity, keyStats and prune', async () => {
      const { durable } = await createApp({ workflows: [Echo] });
      const refusals: [() => unknown, RegExp][] = [
        [() => durable.listRuns({ workflw: 'm_echo' } as never), /^listRuns: unknown option "workflw" \(did you mean "workflow"\?\)/],
        [() => durable.countRuns({ stauts: 'failed' } as never), /^countRuns: unknown option "stauts" \(did you mean "status"\?\)/],
        [() => durable.countRuns({}, { cpa: 5 } as never), /^countRuns: unknown option "cpa" \(did you mean "cap"\?\)/],
        [() => durable.listKeys({ serach: 'a' } as never), /^listKeys: unknown option "serach" \(did you mean "search"\?\)/],
        [() => durable.listActivity({ kind: ['key_duplicate'] } as never), /^listActivity: unknown option "kind" \(did you mean "kinds"\?\)/],
        [() => durable.keyStats({ workflow: Echo, limit: 3 } as never), /^keyStats: unknown option "limit"/],
        [() => durable.prune({ olderthan: '1d' } as never), /^prune: unknown option "olderthan" \(did you mean "olderThan"\?\)/],
      ];
      for (const [call, message] of refusals) expectError(await caught(call), DurableValidationError, 'invalid', message);
    });

    it('a misspelt option of ctx.waitForEvent or ctx.callWorkflow fails the run at once (no retries), naming it', async () => {
      misspeltWaitCalls = 0;
      const { durable } = await createApp({ workflows: [Echo, MisspeltWait, MisspeltCall] });
      const wait = await durable.waitForRun((await durable.start(MisspeltWait, {})).runId, { timeout: 30_000 });
      expect(wait).toMatchObject({ status: 'failed', attempt: 1, error: { name: 'DurableValidationError', code: 'invalid', step: 'ask' } });
      expect((wait.error as { message: string }).message).toMatch(/^ctx\.waitForEvent\('answer'\): unknown option "timout" \(did you mean "timeout"\?\)/);
      expect(misspeltWaitCalls).toBe(1);
      const call = await durable.waitForRun((await durable.start(MisspeltCall, {})).runId, { timeout: 30_000 });
      expect(call).toMatchObject({ status: 'failed', attempt: 1, error: { name: 'DurableValidationError', code: 'invalid', step: 'call' } });
      expect((call.error as { message: string }).message).toMatch(/^ctx\.callWorkflow: unknown option "dealy" \(did you mean "delay"\?\)/);
      // no child was started
      expect(await durable.listRuns({ workflow: Echo })).toEqual([]);
    });

    it('a misspelt module option: one short line naming it and the nearest option', async () => {
      const opts = { ...testOptions(), nodeTimout: '10s' };
      const err = await caught(() => createApp({ workflows: [Echo], durableModule: DurableModule.forRoot(opts as never) }));
      expectError(err, DurableValidationError, 'invalid', /unknown option "nodeTimout" \(did you mean "nodeTimeout"\?\)/);
      expect(err.message.split('\n')).toHaveLength(2); // the heading and the one problem
      const nested = await caught(() =>
        createApp({ workflows: [Echo], durableModule: DurableModule.forRoot({ ...testOptions(), worker: { concurency: 2 } } as never) }),
      );
      expectError(nested, DurableValidationError, 'invalid', /unknown option "worker\.concurency" \(did you mean "worker\.concurrency"\?\)/);
    });
  });

  describe('schedules', () => {
    it('an impossible cron is refused by schedule() before its row is stored; a misspelt schedule option too', async () => {
      const { durable, schema } = await createApp({ workflows: [Echo] });
      expectError(
        await caught(() => durable.schedule(Echo, '0 0 31 2 *', { name: 'never' })),
        DurableValidationError,
        'invalid',
        /cron "0 0 31 2 \*" matches no date, so it would never fire/,
        /check its day and month fields/,
      );
      expectError(
        await caught(() => durable.schedule(Echo, '0 0 * * *', { timezon: 'UTC' } as never)),
        DurableValidationError,
        'invalid',
        /unknown option "timezon" \(did you mean "timezone"\?\)/,
      );
      expect(await durable.listSchedules()).toEqual([]);
      expect(await sql(`select name from ${ident(schema)}.schedules`)).toEqual([]);
      // a leap day is possible: stored
      await expect(durable.schedule(Echo, '0 0 29 2 *', { name: 'leap' })).resolves.toMatchObject({ name: 'leap' });
    });

    it('an impossible @Schedule cron fails the startup before anything is written', async () => {
      @Schedule('0 0 30 2 *')
      @Workflow('m_never_fires')
      class NeverFires {
        @Step()
        async one() {}
      }
      const schema = freshSchema();
      const err = await caught(() => createApp({ schema, workflows: [NeverFires] }));
      expectError(err, DurableValidationError, 'invalid', /@Schedule\('0 0 30 2 \*'\) on workflow "m_never_fires"/, /matches no date/);
      expect(await tableExists(schema, 'schedules')).toBe(false);
    });
  });

  describe('runs', () => {
    it('a step returning a BigInt fails the run at once (no retries) with a clear, coded error', async () => {
      bigintCalls = 0;
      const { durable } = await createApp({ workflows: [ReturnsBigInt] });
      const { runId } = await durable.start(ReturnsBigInt, {});
      const run = await durable.waitForRun(runId, { timeout: 30_000 });
      expect(run.status).toBe('failed');
      expect(run.attempt).toBe(1);
      expect(bigintCalls).toBe(1);
      expect(run.error).toMatchObject({ name: 'DurableValidationError', code: 'invalid', step: 'count', attempt: 1 });
      expect((run.error as { message: string }).message).toBe(
        'step "count" returned a value that cannot be stored: result.n is a BigInt, which JSON cannot hold; result must be JSON-serialisable ' +
          '(not retried: every attempt would return the same)',
      );
    });

    it("an entity the module's DataSource does not know (forRoot({ url })) fails ctx.transaction at once, saying how to register it", async () => {
      ghostCalls = 0;
      const { durable } = await createApp({ workflows: [UsesUnknownEntity] });
      const { runId } = await durable.start(UsesUnknownEntity, {});
      const run = await durable.waitForRun(runId, { timeout: 30_000 });
      expect(run).toMatchObject({ status: 'failed', attempt: 1, error: { name: 'DurableValidationError', code: 'invalid', step: 'rename' } });
      expect(ghostCalls).toBe(1);
      const { message } = run.error as { message: string };
      expect(message).toMatch(/^ctx\.transaction: the durable module's DataSource does not know the entity Ghost \(/);
      expect(message).toMatch(/give the module the app's DataSource \(DurableModule\.forRootAsync/);
      expect(message).toMatch(/TypeOrmModule\.forFeature\(\[Ghost\]\)/);
    });

    it('KeyTakenError names the key and the workflow, and carries them', async () => {
      // no worker: the holder stays pending, so its key stays taken for both calls
      const { durable } = await createApp({ workflows: [Strict], options: { worker: false } });
      const { runId } = await durable.start(Strict, {}, { key: 'invoice:INV-2208' });
      const err = await caught(() => durable.start(Strict, {}, { key: 'invoice:INV-2208' }));
      expectError(err, KeyTakenError, 'key_taken', new RegExp(`^key "invoice:INV-2208" of workflow "m_strict" is taken by run ${runId}$`));
      expect(err).toMatchObject({ holderId: runId, key: 'invoice:INV-2208', workflow: 'm_strict' });
      const [many] = await durable.startMany(Strict, [{ key: 'invoice:INV-2208' }]);
      expect('error' in many && many.error.message).toBe(err.message);
    });
  });
});
