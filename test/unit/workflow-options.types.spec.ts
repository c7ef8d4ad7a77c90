import * as path from 'node:path';
import * as ts from 'typescript';
import { Workflow } from '../../src';
import { DurableValidationError } from '../../src/errors';

/**
 * Type-checks snippets that import the library, all in one program (a program costs seconds),
 * returning each snippet's diagnostics' messages by name.
 */
function typeErrors<K extends string>(sources: Record<K, string>): Record<K, string[]> {
  const files = new Map(Object.entries<string>(sources).map(([name, source]) => [path.join(__dirname, `__snippet_${name}__.ts`), source]));
  const options: ts.CompilerOptions = {
    strict: true,
    noEmit: true,
    experimentalDecorators: true,
    emitDecoratorMetadata: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.CommonJS,
    skipLibCheck: true,
    types: ['node'],
  };
  const host = ts.createCompilerHost(options);
  const read = host.readFile.bind(host);
  host.readFile = (name) => files.get(path.resolve(name)) ?? read(name);
  const exists = host.fileExists.bind(host);
  host.fileExists = (name) => files.has(path.resolve(name)) || exists(name);
  const diagnostics = ts.getPreEmitDiagnostics(ts.createProgram([...files.keys()], options, host));
  const out = {} as Record<K, string[]>;
  for (const [name, file] of Object.keys(sources).map((n) => [n, path.join(__dirname, `__snippet_${n}__.ts`)] as const)) {
    out[name as K] = diagnostics
      .filter((d) => d.file && path.resolve(d.file.fileName) === file)
      .map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
  }
  return out;
}

/** A module declaring workflows by extending DurableWorkflow, and the head of a function starting them. */
const startScope = `
  import { DurableService, DurableWorkflow, Step } from '../../src';
  class Never extends DurableWorkflow('never', { reuse: 'never' }) {
    @Step() async one() { return 1; }
  }
  class Closes extends DurableWorkflow('closes', { reuse: 'afterClose' }) {
    @Step() async one() { return 1; }
  }
  class Plain extends DurableWorkflow('plain') {
    @Step() async one() { return 1; }
  }
  export async function go(durable: DurableService) {`;

const errors = typeErrors({
  decoratorNeverRunAgain: `
    import { Workflow } from '../../src';
    @Workflow('w', { reuse: 'never', onDuplicate: 'runAgain' })
    export class W {}
  `,
  decoratorOthers: `
    import { Workflow } from '../../src';
    @Workflow('a', { reuse: 'never', onDuplicate: 'error' }) export class A {}
    @Workflow('b', { reuse: 'afterClose', onDuplicate: 'runAgain' }) export class B {}
    @Workflow('c', { reuse: 'afterFailure', onDuplicate: { sendEvent: 'x' } }) export class C {}
    @Workflow('d', { onDuplicate: 'runAgain' }) export class D {}
  `,
  baseNeverRunAgain: `
    import { DurableWorkflow } from '../../src';
    export class W extends DurableWorkflow('w', { reuse: 'never', onDuplicate: 'runAgain' }) {}
  `,
  startRunAgain: `${startScope}
      await durable.start(Never, {}, { key: 'k', onDuplicate: 'runAgain' });
    }`,
  startRunAgainExpected: `${startScope}
      // @ts-expect-error runAgain on a workflow whose key is never freed
      await durable.start(Never, {}, { key: 'k', onDuplicate: 'runAgain' });
    }`,
  startRunAgainTyped: `${startScope}
      await durable.start<{ n: number }>(Never, { n: 1 }, { key: 'k', onDuplicate: 'runAgain' });
    }`,
  startRunAgainUnion: `${startScope}
      const either: typeof Never | typeof Closes = Math.random() > 0.5 ? Never : Closes;
      await durable.start(either, {}, { key: 'k', onDuplicate: 'runAgain' });
    }`,
  startOthers: `${startScope}
      await durable.start(Never, {}, { key: 'k', onDuplicate: 'error' });
      await durable.start(Never, {}, { key: 'k', onDuplicate: { sendEvent: 'e' }, priority: 1 });
      await durable.start(Closes, {}, { key: 'k', onDuplicate: 'runAgain' });
      await durable.start(Plain, {}, { key: 'k', onDuplicate: 'runAgain' });
      await durable.start('never', {}, { key: 'k', onDuplicate: 'runAgain' });
      await durable.start<{ n: number }>(Never, { n: 1 }, { key: 'k' });
      const fn: Function = Plain;
      const ref: string | Function = 'closes';
      const options: import('../../src').StartOptions = { onDuplicate: 'runAgain' };
      await durable.start(fn, {}, { key: 'k', onDuplicate: 'runAgain' });
      await durable.start(ref, {}, options);
      await durable.start(Closes, {}, options);
    }`,
});

describe("reuse 'never' with onDuplicate 'runAgain'", () => {
  it('is a compile-time type error on @Workflow', () => {
    expect(errors.decoratorNeverRunAgain.join('\n')).toMatch(/runAgain/);
  });

  it('type-checks every other combination', () => {
    expect(errors.decoratorOthers).toEqual([]);
  });

  it('is a compile-time type error on DurableWorkflow', () => {
    expect(errors.baseNeverRunAgain.join('\n')).toMatch(/runAgain/);
  });

  it('is a compile-time type error per call where the workflow is given as its class (extending DurableWorkflow)', () => {
    expect(errors.startRunAgain.join('\n')).toMatch(/"runAgain"/);
    // the same line under @ts-expect-error compiles: the error is there, and only there
    expect(errors.startRunAgainExpected).toEqual([]);
  });

  it('is a compile-time type error per call with an explicit input type, and for a union of classes one of which says never', () => {
    expect(errors.startRunAgainTyped.join('\n')).toMatch(/"runAgain"/);
    expect(errors.startRunAgainUnion.join('\n')).toMatch(/"runAgain"/);
  });

  it('type-checks every other mode per call, every other workflow and a workflow given by name', () => {
    expect(errors.startOthers).toEqual([]);
  });
});

describe('@Workflow options checked when the class is defined', () => {
  const define = (options: object) => () => Workflow('w', options as Parameters<typeof Workflow>[1]);

  it.each([
    ['an unknown reuse', { reuse: 'after_close' }, /reuse must be one of 'afterClose', 'afterFailure', 'never'/],
    [
      'an unknown onDuplicate',
      { onDuplicate: 'use_existing' },
      /onDuplicate must be one of 'useExisting', 'error', 'cancelExisting', 'runAgain' or \{ sendEvent: name \}/,
    ],
    ['an empty sendEvent name', { onDuplicate: { sendEvent: '' } }, /onDuplicate\.sendEvent must be a string of 1 to 255 bytes/],
    ['runAgain with reuse never (types bypassed)', { reuse: 'never', onDuplicate: 'runAgain' }, /cannot be combined with reuse 'never'/],
  ])('%s throws DurableValidationError', (_label, options, message) => {
    expect(define(options)).toThrow(DurableValidationError);
    expect(define(options)).toThrow(message);
  });

  it.each([[{}], [{ reuse: 'never', onDuplicate: 'error' }], [{ reuse: 'afterFailure', onDuplicate: { sendEvent: 'x' } }], [{ onDuplicate: 'runAgain' }]])(
    '%j is accepted',
    (options) => {
      expect(define(options)).not.toThrow();
    },
  );
});
