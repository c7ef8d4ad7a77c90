/**
 * The `nestjs-durable/jest` preset (jest/jest-preset.js) under the tsconfig of an app made by
 * `nest new`: `module` and `moduleResolution` `nodenext` with `resolvePackageJsonExports: true`,
 * `isolatedModules`, decorators. The preset compiles the app's TypeScript to CommonJS, and with the
 * TypeScript 5 this repository uses ts-jest then resolves modules the `node10` way, where
 * `resolvePackageJsonExports` is an error (TS5098) unless the preset unsets it (reported when
 * ts-jest compiles each file on its own, as it does under `isolatedModules`). Each case is a
 * small app in a temporary folder (its `node_modules` a link to the repository's), run by the
 * repository's Jest with the preset: a CommonJS app and an ES module app (`"type": "module"`), each
 * with a spec that imports a sibling by its `.js` name and loads NestJS 12 (ES modules only).
 */
import { spawn } from 'child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import * as path from 'path';

const ROOT = path.resolve(__dirname, '..', '..');
const JEST = path.join(ROOT, 'node_modules', 'jest', 'bin', 'jest.js');

/** The compiler options of `nest new` (Nest 11's CommonJS app and Nest 12's ES module app share them), with Jest's types. */
const NEST_NEW_COMPILER_OPTIONS = {
  module: 'nodenext',
  moduleResolution: 'nodenext',
  resolvePackageJsonExports: true,
  esModuleInterop: true,
  isolatedModules: true,
  declaration: true,
  removeComments: true,
  emitDecoratorMetadata: true,
  experimentalDecorators: true,
  allowSyntheticDefaultImports: true,
  target: 'ES2023',
  types: ['node', 'jest'],
  sourceMap: true,
  outDir: './dist',
  incremental: true,
  skipLibCheck: true,
  strict: true,
  strictPropertyInitialization: false,
};

const GREETER = `import { Injectable } from '@nestjs/common';

@Injectable()
export class Greeter {
  greet(name: string): string {
    return \`hello \${name}\`;
  }
}
`;

const SPEC = `import { Test } from '@nestjs/testing';
import { Greeter } from './greeter.js';

describe('Greeter', () => {
  it('is provided by a Nest testing module', async () => {
    const app = await Test.createTestingModule({ providers: [Greeter] }).compile();
    expect(app.get(Greeter).greet('jest')).toBe('hello jest');
    await app.close();
  });
});
`;

interface Ran {
  code: number | null;
  output: string;
}

/** Runs the repository's Jest in `cwd` with the app's own config; resolves with its exit code and output. */
function runJest(cwd: string): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const env = { ...process.env };
    delete env.JEST_WORKER_ID;
    const child = spawn(process.execPath, [JEST, '--ci', '--watchman=false', '--colors=false'], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (output += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (output += c));
    const timer = setTimeout(() => child.kill('SIGKILL'), 100_000);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

const folders: string[] = [];
afterAll(() => {
  for (const folder of folders) rmSync(folder, { recursive: true, force: true });
});

/** A fresh app: package.json (with `type` when given) whose `jest` entry is the one docs/testing.md shows, nest new's tsconfig, a provider and its spec. */
function makeApp(type: 'commonjs' | 'module'): string {
  const app = mkdtempSync(path.join(tmpdir(), `durable-jest-preset-${type}-`));
  folders.push(app);
  symlinkSync(path.join(ROOT, 'node_modules'), path.join(app, 'node_modules'), 'dir');
  const jest = {
    preset: path.join(ROOT, 'jest', 'jest-preset.js'), // what `nestjs-durable/jest` names in an app
    rootDir: 'src',
    testRegex: '.*\\.spec\\.ts$',
    cacheDirectory: path.join(app, '.jest-cache'),
  };
  writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: `preset-${type}`, private: true, type, jest }, null, 2));
  writeFileSync(path.join(app, 'tsconfig.json'), JSON.stringify({ compilerOptions: NEST_NEW_COMPILER_OPTIONS }, null, 2));
  mkdirSync(path.join(app, 'src'));
  writeFileSync(path.join(app, 'src', 'greeter.ts'), GREETER);
  writeFileSync(path.join(app, 'src', 'greeter.spec.ts'), SPEC);
  return app;
}

describe('the nestjs-durable/jest preset with the tsconfig of nest new', () => {
  it.each(['commonjs', 'module'] as const)(
    'runs the spec of a %s app',
    async (type) => {
      const ran = await runJest(makeApp(type));
      expect(ran.output).not.toMatch(/TS5098|resolvePackageJsonExports/);
      expect(ran.output).toMatch(/Tests:\s+1 passed, 1 total/);
      expect(ran.code).toBe(0);
    },
    120_000,
  );
});
