/**
 * A workflow declared by extending `DurableWorkflow(name, options)`: it runs exactly as one declared
 * with `@Workflow(name, options)`, its options are in its type, and the ways to get it wrong are
 * refused at startup with a message naming the fix.
 */
import { Injectable } from '@nestjs/common';
import { DurableValidationError, DurableWorkflow, KeyTakenError, RunContext, Step, Workflow, type OnDuplicate } from '../../src';
import { countRuns, createApp } from '../support';

@Injectable()
class Greeter {
  greet(name: string): string {
    return `hello ${name}`;
  }
}

@Injectable()
class Welcome extends DurableWorkflow('wb_welcome', { reuse: 'never', onDuplicate: 'error' }) {
  constructor(private readonly greeter: Greeter) {
    super();
  }

  @Step()
  async greet(ctx: RunContext<{ name: string }>) {
    return { text: this.greeter.greet(ctx.input.name) };
  }
}

/** Rejections of `fn`, which must reject. */
async function rejection(fn: () => Promise<unknown>): Promise<Error> {
  return fn().then(
    () => {
      throw new Error('expected a rejection');
    },
    (err: Error) => err,
  );
}

describe('a workflow declared by extending DurableWorkflow', () => {
  it('runs with its injected dependencies and follows the key rules it was given', async () => {
    const { durable } = await createApp({ workflows: [Welcome], providers: [Greeter] });
    const first = await durable.start(Welcome, { name: 'ada' }, { key: 'user:1' });
    expect(first.outcome).toBe('created');
    const done = await durable.waitForRun(first.runId, { timeout: '20s' });
    expect(done.workflow).toBe('wb_welcome');
    expect(done.result).toEqual({ text: 'hello ada' });

    // reuse 'never' + onDuplicate 'error': the finished holder keeps the key
    const again = await rejection(() => durable.start(Welcome, { name: 'ada' }, { key: 'user:1' }));
    expect(again).toBeInstanceOf(KeyTakenError);
    expect((again as KeyTakenError).holderId).toBe(first.runId);
    // started by name, the same workflow
    const byName = await durable.start('wb_welcome', { name: 'bob' }, { key: 'user:2' });
    expect((await durable.waitForRun(byName.runId, { timeout: '20s' })).result).toEqual({ text: 'hello bob' });
  });

  it("refuses onDuplicate 'runAgain' per call when the types are bypassed, writing nothing", async () => {
    const { durable, schema } = await createApp({ workflows: [Welcome], providers: [Greeter] });
    const runAgain = 'runAgain' as Exclude<OnDuplicate, 'runAgain'>;
    const err = await rejection(() => durable.start(Welcome, { name: 'ada' }, { key: 'user:1', onDuplicate: runAgain }));
    expect(err).toBeInstanceOf(DurableValidationError);
    expect(err.message).toMatch(/runAgain/);
    expect(await countRuns(schema)).toBe(0);
  });

  it('is refused at startup when it is also decorated with @Workflow', async () => {
    @Workflow('wb_twice')
    class Twice extends DurableWorkflow('wb_twice') {
      @Step()
      async one() {
        return 1;
      }
    }
    const err = await createApp({ workflows: [Twice] }).then(
      () => new Error('expected the app to be refused'),
      (e: Error) => e,
    );
    expect(err).toBeInstanceOf(DurableValidationError);
    expect(err.message).toMatch(/workflow "wb_twice" \(Twice\) extends DurableWorkflow\(…\) and is also decorated with @Workflow/);
  });

  it('is refused at startup when two classes extend one base, naming both and the fix', async () => {
    const Shared = DurableWorkflow('wb_shared');
    class First extends Shared {
      @Step()
      async one() {
        return 1;
      }
    }
    class Second extends Shared {
      @Step()
      async one() {
        return 2;
      }
    }
    const err = await rejection(() => createApp({ workflows: [First, Second] }));
    expect(err).toBeInstanceOf(DurableValidationError);
    expect(err.message).toMatch(
      /two workflows are named "wb_shared" \(First and Second\): give each workflow a name of its own \(in @Workflow\(name\) or DurableWorkflow\(name\)/,
    );
  });

  it('is refused at startup when it takes dependencies without a decorator of its own', async () => {
    class Undecorated extends DurableWorkflow('wb_undecorated') {
      constructor(readonly greeter: Greeter) {
        super();
      }

      @Step()
      async one() {
        return this.greeter.greet('x');
      }
    }
    const err = await createApp({ workflows: [Undecorated], providers: [Greeter] }).then(
      () => new Error('expected the app to be refused'),
      (e: Error) => e,
    );
    expect(err).toBeInstanceOf(DurableValidationError);
    expect(err.message).toMatch(/\(Undecorated\) takes constructor dependencies but has no decorator: give it @Injectable\(\)/);
  });

  it('validates its options when the class is defined, as @Workflow does', () => {
    const bad = { reuse: 'after_close' } as unknown as { reuse: 'never' };
    expect(() => DurableWorkflow('wb_bad', bad)).toThrow(DurableValidationError);
    expect(() => DurableWorkflow('wb_bad', bad)).toThrow(/reuse must be one of/);
  });
});
