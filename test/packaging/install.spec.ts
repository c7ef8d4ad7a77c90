/**
 * The package as a user gets it: `npm pack`, then for each supported pair a fresh app in a temporary
 * folder installs the tarball with the install line of docs/install.md (the README's line for the
 * current majors), compiles a TypeScript consumer against the packed types with `strict` and
 * `skipLibCheck: false`, boots it with node and sees a keyed run started inside a TypeORM
 * transaction complete. Then, for the same two apps, the testing kit under the app's own Jest as
 * docs/testing.md sets it up (its install line and `nestjs-durable/jest` preset), running that
 * page's first example against the README tutorial's workflow. Uses the npm registry and npm's own
 * cache (shared with the repository's installs; what is cached is not fetched again); about 2–3 minutes.
 */
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import * as path from 'path';
import { randomBytes } from 'crypto';
import { Client } from 'pg';
import { cleanEnv, run, step, versionIn, walk } from './install-helpers';
import { databaseUrl, freshSchema, ident, sql } from '../support/db';
import { codeBlocks } from '../docs/code-blocks';

const ROOT = path.resolve(__dirname, '..', '..');
const TSC = require.resolve('typescript/bin/tsc', { paths: [ROOT] });
const APP_SOURCE = path.join(__dirname, 'app', 'main.ts');
const KEEP = process.env.DURABLE_TEST_KEEP_PACKAGING === '1';

/** The `npm install …` line that follows `<!-- packaging-test: name -->` in docs/install.md. */
function docsInstallLine(name: string): string {
  const docs = readFileSync(path.join(ROOT, 'docs', 'install.md'), 'utf8');
  const m = new RegExp(`<!-- packaging-test: ${name} -->\\s*\`\`\`sh\\n(npm install nestjs-durable [^\\n]+)\\n\`\`\``).exec(docs);
  if (!m) throw new Error(`docs/install.md has no install line marked "packaging-test: ${name}"`);
  return m[1].trim();
}

/** The `npm install --save-dev …` line and the `jest` entry of package.json that docs/testing.md gives (marked `packaging-test: jest-…`). */
function docsJestSetup(): { install: string[]; jest: Record<string, unknown> } {
  const docs = readFileSync(path.join(ROOT, 'docs', 'testing.md'), 'utf8');
  const install = /<!-- packaging-test: jest-install -->\s*```sh\n(npm install --save-dev [^\n]+)\n```/.exec(docs);
  const config = /<!-- packaging-test: jest-config -->\s*```json\n([\s\S]*?)\n```/.exec(docs);
  if (!install || !config) throw new Error('docs/testing.md has no install line or jest config marked "packaging-test: jest-install" / "jest-config"');
  const [npm, verb, ...rest] = install[1].trim().split(/\s+/);
  expect([npm, verb]).toEqual(['npm', 'install']);
  const { jest } = JSON.parse(config[1]) as { jest: Record<string, unknown> };
  return { install: rest, jest };
}

/**
 * docs/testing.md's first example (its first named TypeScript file) and the README tutorial's files
 * it imports (`./x.js`), by file name, as they stand last on their page.
 */
function docsTestFiles(): Map<string, string> {
  const named = (doc: string) => codeBlocks(ROOT, doc).filter((b) => b.kind === 'file' && b.fileName);
  const tutorial = new Map(named('README.md').map((b) => [b.fileName!, b.code]));
  const example = named(path.join('docs', 'testing.md'))[0];
  expect(example?.fileName).toMatch(/\.spec\.ts$/);
  const files = new Map([[example.fileName!, example.code]]);
  const pending = [example.code];
  while (pending.length) {
    for (const [, name] of pending.pop()!.matchAll(/from '\.\/([\w.-]+)\.js'/g)) {
      const file = `${name}.ts`;
      if (files.has(file)) continue;
      const code = tutorial.get(file);
      if (!code) throw new Error(`docs/testing.md's example imports ./${name}.js, which the README tutorial does not have`);
      files.set(file, code);
      pending.push(code);
    }
  }
  return files;
}

interface Pair {
  name: 'nest12-esm' | 'nest11-cjs';
  /** What the app has before it adds the module (a `nest new` app of that Nest major). */
  base: string[];
  manifest: Record<string, unknown>;
  /** tsconfig of the build (emitted and run), then of a second, type-only check. */
  build: Record<string, unknown>;
  check: Record<string, unknown>;
  moduleSystem: 'esm' | 'commonjs';
  /** Version prefixes the install must end with; null: not installed (an optional peer the app does not use). */
  versions: Record<string, string | null>;
}

const NEST_NEW_TOOLS: Record<string, string[]> = { '12': ['typescript@6', '@nestjs/schematics@12'], '11': ['typescript@5', '@nestjs/schematics@11'] }; // what `nest new` has beside the app's packages
const compilerOptions = {
  target: 'ES2022',
  strict: true,
  skipLibCheck: false,
  experimentalDecorators: true,
  emitDecoratorMetadata: true,
  types: ['node'],
  rootDir: 'src',
  outDir: 'dist',
};

const PAIRS: Pair[] = [
  {
    name: 'nest12-esm',
    base: ['@nestjs/common@12', '@nestjs/core@12', 'reflect-metadata@0.2', 'rxjs@7', '@types/node@20'],
    manifest: { type: 'module' },
    build: { module: 'nodenext', moduleResolution: 'nodenext' },
    check: { module: 'preserve', moduleResolution: 'bundler', noEmit: true },
    moduleSystem: 'esm',
    versions: {
      '@nestjs/core': '12.',
      '@nestjs/schedule': null,
      '@nestjs/terminus': null,
      '@nestjs/typeorm': '12.',
      typeorm: '1.',
      'class-validator': '0.15.',
    },
  },
  {
    name: 'nest11-cjs',
    base: [
      '@nestjs/common@11',
      '@nestjs/core@11',
      '@nestjs/schedule@6',
      '@nestjs/terminus@11',
      'class-validator@0.14',
      'class-transformer@0.5',
      'reflect-metadata@0.2',
      'rxjs@7',
      '@types/node@20',
    ],
    manifest: {},
    build: { module: 'node16', moduleResolution: 'node16' },
    check: { module: 'commonjs', moduleResolution: 'node10', noEmit: true },
    moduleSystem: 'commonjs',
    versions: {
      '@nestjs/core': '11.',
      '@nestjs/schedule': '6.',
      '@nestjs/terminus': '11.',
      '@nestjs/typeorm': '11.',
      typeorm: '0.3.',
      'class-validator': '0.14.',
    },
  },
];

describe('packaging: the packed module in a fresh app', () => {
  let scratch: string;
  let tarball: string;
  let packed: string;

  beforeAll(async () => {
    scratch = mkdtempSync(path.join(tmpdir(), 'nestjs-durable-packaging-'));
    const { stdout } = await step('npm pack', () => run('npm', ['pack', '--json', '--pack-destination', scratch], { cwd: ROOT, timeout: 180_000 }));
    const [info] = JSON.parse(stdout.slice(stdout.indexOf('['))) as { filename: string }[];
    tarball = path.join(scratch, info.filename);
    packed = path.join(scratch, 'packed');
    mkdirSync(packed);
    await run('tar', ['-xzf', tarball, '-C', packed], { cwd: scratch });
    packed = path.join(packed, 'package');
  }, 240_000);

  afterAll(() => {
    if (scratch && !KEEP) rmSync(scratch, { recursive: true, force: true });
  });

  it('ships a package.json without scripts, workspaces or devDependencies, and its types through exports', () => {
    const shipped = JSON.parse(readFileSync(path.join(packed, 'package.json'), 'utf8'));
    const source = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
    expect(shipped.scripts).toBeUndefined();
    expect(shipped.workspaces).toBeUndefined();
    expect(shipped.devDependencies).toBeUndefined();
    expect(shipped.peerDependencies).toEqual(source.peerDependencies);
    expect(shipped.dependencies).toEqual(source.dependencies);
    expect(shipped.engines).toEqual(source.engines);
    expect(shipped.exports['.']).toEqual({ types: './dist/src/index.d.ts', default: './dist/src/index.js' });
    for (const f of [shipped.main, shipped.types, shipped.exports['.'].types, shipped.exports['.'].default]) {
      expect(existsSync(path.join(packed, f))).toBe(true);
    }
    // the working tree's package.json is back as it was
    expect(source.scripts.prepack).toBeDefined();
    expect(existsSync(path.join(ROOT, '.pack', 'package.json'))).toBe(false);
  });

  it('ships only the library, and every source map names files that are in the package', () => {
    const files = walk(packed).map((f) => path.relative(packed, f));
    expect(files.filter((f) => /^(test|bench|sample-app|scripts|compat)\//.test(f))).toEqual([]);
    expect(files.filter((f) => f.startsWith('dist/') && !/^dist\/(src|migrations)\//.test(f))).toEqual([]);
    const maps = files.filter((f) => f.endsWith('.js.map'));
    expect(maps.length).toBeGreaterThan(10);
    const missing: string[] = [];
    for (const map of maps) {
      const { sources } = JSON.parse(readFileSync(path.join(packed, map), 'utf8')) as { sources: string[] };
      for (const s of sources) if (!existsSync(path.join(packed, path.dirname(map), s))) missing.push(`${map} -> ${s}`);
    }
    for (const js of files.filter((f) => f.endsWith('.js'))) {
      const m = /\/\/# sourceMappingURL=(\S+)\s*$/.exec(readFileSync(path.join(packed, js), 'utf8'));
      if (m && !existsSync(path.join(packed, path.dirname(js), m[1]))) missing.push(`${js} -> ${m[1]}`);
    }
    expect(missing).toEqual([]);
  });

  it('every relative link of the packed README and docs names a file the package ships', () => {
    const pages = walk(packed)
      .map((f) => path.relative(packed, f))
      .filter((f) => f.endsWith('.md') && (f === 'README.md' || f.startsWith('docs/')));
    expect(pages).toContain('docs/benchmarks.md');
    const dead: string[] = [];
    for (const page of pages) {
      for (const [, target] of readFileSync(path.join(packed, page), 'utf8').matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^(https?:|mailto:|#)/.test(target)) continue;
        const file = path.join(packed, path.dirname(page), decodeURIComponent(target.split('#')[0]));
        if (!existsSync(file)) dead.push(`${page} -> ${target}`);
      }
    }
    expect(dead).toEqual([]);
  });

  it("the README's install line is the one docs/install.md gives for the current majors", () => {
    const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
    expect(readme).toContain(docsInstallLine('nest12-esm'));
  });

  describe.each(PAIRS)('$name', (pair) => {
    it("installs with docs/install.md's line, compiles against the packed types (skipLibCheck: false) and completes a keyed run started in a transaction", async () => {
      const app = path.join(scratch, pair.name);
      mkdirSync(path.join(app, 'src'), { recursive: true });
      writeFileSync(
        path.join(app, 'package.json'),
        JSON.stringify({ name: `packaging-${pair.name}`, version: '1.0.0', private: true, ...pair.manifest }, null, 2),
      );
      const npmInstall = ['install', '--no-audit', '--no-fund'];
      await step('base install', () => run('npm', [...npmInstall, ...pair.base], { cwd: app }));

      // the line as docs/install.md (and, for the current majors, the README) writes it; the tarball for the name
      const [npm, verb, pkg, ...rest] = docsInstallLine(pair.name).split(/\s+/);
      expect([npm, verb, pkg]).toEqual(['npm', 'install', 'nestjs-durable']);
      expect(rest.filter((a) => a.startsWith('-'))).toEqual([]);
      await step('install line', () => run('npm', ['install', tarball, ...rest], { cwd: app }));
      for (const [name, prefix] of Object.entries(pair.versions)) {
        if (prefix === null) {
          expect({ name, installed: existsSync(path.join(app, 'node_modules', name)) }).toEqual({ name, installed: false });
          continue;
        }
        const version = name === 'class-validator' ? versionIn(app, 'nestjs-durable/node_modules/class-validator', 'class-validator') : versionIn(app, name);
        expect({ name, version: version.slice(0, prefix.length) }).toEqual({ name, version: prefix });
      }

      copyFileSync(APP_SOURCE, path.join(app, 'src', 'main.ts'));
      writeFileSync(path.join(app, 'tsconfig.json'), JSON.stringify({ compilerOptions: { ...compilerOptions, ...pair.build }, include: ['src'] }, null, 2));
      writeFileSync(path.join(app, 'tsconfig.check.json'), JSON.stringify({ extends: './tsconfig.json', compilerOptions: pair.check }, null, 2));
      const schema = freshSchema('pk');
      const [, , { stdout, stderr }] = await Promise.all([
        run('npm', ['ls', '--all'], { cwd: app, timeout: 180_000 }), // no missing or invalid (peer) dependency
        step('tsc (check)', () => run(process.execPath, [TSC, '-p', 'tsconfig.check.json'], { cwd: app, timeout: 360_000 })),
        step('tsc (build) and run', async () => {
          await run(process.execPath, [TSC, '-p', 'tsconfig.json'], { cwd: app, timeout: 360_000 });
          return run(process.execPath, ['dist/main.js'], {
            cwd: app,
            env: cleanEnv({ DATABASE_URL: databaseUrl(), DURABLE_SCHEMA: schema }),
            timeout: 90_000,
            allowFailure: true,
          });
        }),
      ]);
      const line = stdout.split('\n').find((l) => l.startsWith('RESULT '));
      if (!line) throw new Error(`the app printed no RESULT line\n--- stdout\n${stdout}\n--- stderr\n${stderr}`);
      expect(JSON.parse(line.slice('RESULT '.length))).toEqual({
        outcome: 'created',
        status: 'completed',
        key: 'greet:world',
        result: { greeting: 'hello, world' },
        rolledBack: null, // the start in the rolled-back transaction left no run
        health: 'up',
        node: process.version,
        moduleSystem: pair.moduleSystem,
      });
      const runs = await sql(`select workflow, key, status from ${ident(schema)}.runs`);
      expect(runs).toEqual([{ workflow: 'packaging_greet', key: 'greet:world', status: 'completed' }]);

      // the operator CLI, as `npx nestjs-durable` runs it: the package's bin, linked by npm install
      const bin = path.join(app, 'node_modules', '.bin', 'nestjs-durable');
      const listed = await step('the bin', () =>
        run(bin, ['runs', 'list', '--url', databaseUrl(), '--schema', schema, '--json'], { cwd: app, timeout: 60_000 }),
      );
      expect(
        (JSON.parse(listed.stdout) as { workflow: string; key: string; status: string }[]).map(({ workflow, key, status }) => ({ workflow, key, status })),
      ).toEqual(runs);
    }, 900_000); // ~1 min each on an idle 2-core machine; far more when it is shared
  });
  describe.each(PAIRS)('$name: the testing kit under Jest', (pair) => {
    it("with docs/testing.md's install line and jest config, its first example passes against the README tutorial's workflow", async () => {
      const app = path.join(scratch, `${pair.name}-jest`);
      mkdirSync(path.join(app, 'src'), { recursive: true });
      writeFileSync(
        path.join(app, 'package.json'),
        JSON.stringify({ name: `packaging-${pair.name}-jest`, version: '1.0.0', private: true, ...pair.manifest }, null, 2),
      );
      const setup = docsJestSetup();
      // cached packages are not fetched again (the other apps installed most of them)
      const npmInstall = ['install', '--no-audit', '--no-fund', '--prefer-offline'];
      const nest = pair.base.find((p) => p.startsWith('@nestjs/core@'))!.split('@')[2];
      await step('jest app: base install', () => run('npm', [...npmInstall, ...pair.base, `@nestjs/testing@${nest}`, ...NEST_NEW_TOOLS[nest]], { cwd: app }));
      const [, , ...rest] = docsInstallLine(pair.name).split(/\s+/);
      await step('jest app: install line', () => run('npm', [...npmInstall, tarball, ...rest], { cwd: app }));
      await step('jest app: jest install line', () => run('npm', [...npmInstall, ...setup.install], { cwd: app }));
      await step('jest app: npm ls', () => run('npm', ['ls', '--all'], { cwd: app, timeout: 180_000 })); // the app's TypeScript kept, no invalid peer
      const manifest = JSON.parse(readFileSync(path.join(app, 'package.json'), 'utf8'));
      writeFileSync(path.join(app, 'package.json'), JSON.stringify({ ...manifest, jest: setup.jest }, null, 2));
      const files = docsTestFiles();
      for (const [name, code] of files) writeFileSync(path.join(app, 'src', name), code);
      // the app's own tsconfig (as for its build), with jest's types for the test file and the
      // `resolvePackageJsonExports` and `isolatedModules` that `nest new` (11 and 12) turns on
      const tsconfig = {
        compilerOptions: { ...compilerOptions, ...pair.build, resolvePackageJsonExports: true, isolatedModules: true, types: ['node', 'jest'] },
        include: ['src'],
      };
      writeFileSync(path.join(app, 'tsconfig.json'), JSON.stringify(tsconfig, null, 2));

      // a database of its own: the example makes the tutorial's `articles` table with synchronize
      const database = `pk_jest_${randomBytes(5).toString('hex')}`;
      await sql(`create database ${database}`);
      const url = new URL(databaseUrl());
      url.pathname = `/${database}`;
      try {
        const env = cleanEnv({ DATABASE_URL: url.toString(), NO_COLOR: '1' });
        delete env.JEST_WORKER_ID;
        const ran = await step('jest app: jest', () =>
          run(process.execPath, [path.join(app, 'node_modules', 'jest', 'bin', 'jest.js'), '--ci', '--json'], {
            cwd: app,
            env,
            timeout: 120_000,
            allowFailure: true,
          }),
        );
        let report: { success?: boolean; numTotalTestSuites?: number; numFailedTests?: number; numPassedTests?: number } = {};
        try {
          report = JSON.parse(ran.stdout);
        } catch {
          // reported below with jest's output
        }
        if (ran.code !== 0 || !report.success)
          throw new Error(`jest in the app ended with code ${ran.code}\n--- stdout\n${ran.stdout.slice(-6000)}\n--- stderr\n${ran.stderr.slice(-6000)}`);
        expect({ suites: report.numTotalTestSuites, failed: report.numFailedTests }).toEqual({ suites: 1, failed: 0 });
        expect(report.numPassedTests).toBeGreaterThan(0);
        // the run's step wrote through ctx.transaction into the app's table
        const client = new Client({ connectionString: url.toString() });
        await client.connect();
        const { rows } = await client.query('select summary from articles').finally(() => client.end());
        expect(rows).toEqual([{ summary: 'Durable workflows live in Postgres.' }]);
      } finally {
        await sql(`drop database if exists ${database} with (force)`);
      }
    }, 300_000);
  });
});
