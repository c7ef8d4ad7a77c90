import * as path from 'node:path';
import * as ts from 'typescript';
import { Workflow } from '../../src';
import { DurableValidationError } from '../../src/errors';

/** Type-checks a snippet that imports the library, returning its diagnostics' messages. */
function typeErrors(source: string): string[] {
  const file = path.join(__dirname, '__snippet__.ts');
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
  host.readFile = (name) => (path.resolve(name) === file ? source : read(name));
  const exists = host.fileExists.bind(host);
  host.fileExists = (name) => path.resolve(name) === file || exists(name);
  const program = ts.createProgram([file], options, host);
  return ts
    .getPreEmitDiagnostics(program)
    .filter((d) => d.file && path.resolve(d.file.fileName) === file)
    .map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
}

describe("reuse 'never' with onDuplicate 'runAgain'", () => {
  it('is a compile-time type error', () => {
    const errors = typeErrors(`
      import { Workflow } from '../../src';
      @Workflow('w', { reuse: 'never', onDuplicate: 'runAgain' })
      export class W {}
    `);
    expect(errors.join('\n')).toMatch(/runAgain/);
  }, 60_000);

  it('type-checks every other combination', () => {
    const errors = typeErrors(`
      import { Workflow } from '../../src';
      @Workflow('a', { reuse: 'never', onDuplicate: 'error' }) export class A {}
      @Workflow('b', { reuse: 'afterClose', onDuplicate: 'runAgain' }) export class B {}
      @Workflow('c', { reuse: 'afterFailure', onDuplicate: { sendEvent: 'x' } }) export class C {}
      @Workflow('d', { onDuplicate: 'runAgain' }) export class D {}
    `);
    expect(errors).toEqual([]);
  }, 60_000);
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
