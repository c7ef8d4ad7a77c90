/**
 * Documentation that cannot rot: every TypeScript block of the README and docs/*.md is compiled
 * (strict, with a Nest project's decorator settings) in one TypeScript program, against the built
 * package (`dist/`, as an app sees it) and the repository's Nest, TypeORM and terminus; the README
 * tutorial is then compiled to JavaScript and run, as a fresh app, against a database of its own.
 * What each block is (a file, a fragment, a block not meant to compile) is said on the page: see
 * code-blocks.ts.
 */
import { spawn } from 'child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import * as path from 'path';
import { randomBytes } from 'crypto';
import { Client } from 'pg';
import * as ts from 'typescript';
import { DURABLE_MIGRATIONS } from '../../src';
import { databaseUrl, sql } from '../support';
import { codeBlocks, documentationPages, type CodeBlock } from './code-blocks';
import { fragmentPrelude } from './fragment-scope';

const ROOT = path.resolve(__dirname, '..', '..');
/** Where the blocks live for the compiler: served from memory, never written. */
const VIRTUAL = path.join(ROOT, '.doc-blocks');

const compilerOptions: ts.CompilerOptions = {
  target: ts.ScriptTarget.ES2022,
  lib: ['lib.es2022.d.ts'],
  // a Nest CLI app's setting; CommonJS files may require() Nest 12's ES modules (Node 20.19+)
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
  strict: true,
  experimentalDecorators: true,
  emitDecoratorMetadata: true,
  // a Nest 12 app's setting: a type-only name in a decorated signature must be imported with `type`
  isolatedModules: true,
  esModuleInterop: true,
  skipLibCheck: true,
  types: ['node', 'jest'], // the testing pages show jest test files
  rootDir: VIRTUAL,
};

/** One block as a file of the program. */
interface Source {
  block: CodeBlock;
  text: string;
  /** Lines put before the block's own (a fragment's declarations). */
  offset: number;
}

/** The names a block declares or imports at its top level. */
function ownNames(code: string): Set<string> {
  const names = new Set<string>();
  const bind = (n: ts.BindingName): void => {
    if (ts.isIdentifier(n)) names.add(n.text);
    else n.elements.forEach((e) => ts.isBindingElement(e) && bind(e.name));
  };
  const file = ts.createSourceFile('block.ts', code, ts.ScriptTarget.ES2022);
  for (const s of file.statements) {
    if (ts.isImportDeclaration(s)) {
      const clause = s.importClause;
      if (clause?.name) names.add(clause.name.text);
      const bindings = clause?.namedBindings;
      if (bindings && ts.isNamedImports(bindings)) bindings.elements.forEach((e) => names.add(e.name.text));
      if (bindings && ts.isNamespaceImport(bindings)) names.add(bindings.name.text);
    } else if (ts.isVariableStatement(s)) {
      s.declarationList.declarations.forEach((d) => bind(d.name));
    } else if ((ts.isClassDeclaration(s) || ts.isFunctionDeclaration(s) || ts.isInterfaceDeclaration(s) || ts.isTypeAliasDeclaration(s)) && s.name) {
      names.add(s.name.text);
    }
  }
  return names;
}

/** Every block of every page as files of one program, by path; and the blocks to run, with their page's folder. */
function programSources(): { sources: Map<string, Source>; runs: { block: CodeBlock; dir: string }[]; blocks: CodeBlock[] } {
  const sources = new Map<string, Source>();
  const runs: { block: CodeBlock; dir: string }[] = [];
  const pages = documentationPages(ROOT).map((doc) => ({ doc, blocks: codeBlocks(ROOT, doc) }));
  /** The README tutorial's files, as of its last version of each: other pages import them. */
  const tutorial = new Map<string, CodeBlock>();
  for (const b of pages[0].blocks) if (b.kind === 'file' && b.fileName) tutorial.set(b.fileName, b);
  for (const { doc, blocks } of pages) {
    const dir = path.join(VIRTUAL, doc.replace(/\W+/g, '_'));
    const named = blocks.filter((b) => b.kind === 'file' && b.fileName);
    const finalOf = (name: string) => [...named].reverse().find((b) => b.fileName === name) ?? tutorial.get(name)!;
    const names = new Set([...(doc === 'README.md' ? [] : tutorial.keys()), ...named.map((b) => b.fileName!)]);
    for (const name of names) sources.set(path.join(dir, name), { block: finalOf(name), text: finalOf(name).code, offset: 0 });
    for (const b of blocks) {
      if (b.kind === 'fragment') {
        const prelude = fragmentPrelude(ownNames(b.code));
        sources.set(path.join(dir, `fragment-line-${b.line}.mts`), { block: b, text: [...prelude, b.code].join('\n'), offset: prelude.length });
      } else if (b.kind === 'file' && !b.fileName) {
        sources.set(path.join(dir, `block-line-${b.line}.ts`), { block: b, text: b.code, offset: 0 });
      } else if (b.kind === 'file' && finalOf(b.fileName!) !== b) {
        // a file shown again later (a first version): compiled with the page's files as they stood then
        const at = path.join(dir, `as-of-line-${b.line}`);
        for (const name of names) {
          const mine = named.filter((o) => o.fileName === name);
          const then = mine.length ? mine.filter((o) => o.line <= b.line).pop() : tutorial.get(name);
          if (then) sources.set(path.join(at, name), { block: then, text: then.code, offset: 0 });
        }
      }
      if (b.run) runs.push({ block: b, dir });
    }
  }
  return { sources, runs, blocks: pages.flatMap((p) => p.blocks) };
}

/** A compiler host that serves the blocks from memory and everything else from disk. */
function hostFor(sources: Map<string, Source>, options: ts.CompilerOptions): ts.CompilerHost {
  const host = ts.createCompilerHost(options);
  const dirs = new Set([...sources.keys()].flatMap((f) => [path.dirname(f), path.dirname(path.dirname(f))]));
  const { fileExists, readFile, getSourceFile, directoryExists } = host;
  return Object.assign(host, {
    fileExists: (f: string) => sources.has(f) || fileExists.call(host, f),
    readFile: (f: string) => sources.get(f)?.text ?? readFile.call(host, f),
    directoryExists: (d: string) => dirs.has(d) || d === VIRTUAL || (directoryExists?.call(host, d) ?? false),
    getSourceFile: (f: string, lang: ts.ScriptTarget | ts.CreateSourceFileOptions, onError?: (m: string) => void, create?: boolean) => {
      const s = sources.get(f);
      return s ? ts.createSourceFile(f, s.text, lang) : getSourceFile.call(host, f, lang, onError, create);
    },
  });
}

/** `page:line: message` for a diagnostic, at the line of the page it comes from. */
function located(d: ts.Diagnostic, sources: Map<string, Source>): string {
  const message = ts.flattenDiagnosticMessageText(d.messageText, '\n');
  const s = d.file && sources.get(d.file.fileName);
  if (!d.file || !s) return `${d.file ? path.relative(ROOT, d.file.fileName) : '(options)'}: TS${d.code}: ${message}`;
  const { line } = d.file.getLineAndCharacterOfPosition(d.start ?? 0);
  return `${s.block.doc}:${s.block.line + 1 + line - s.offset}: TS${d.code}: ${message}`;
}

/** Runs `node file` with `env` (killed after `timeout` ms). */
function node(file: string, env: NodeJS.ProcessEnv, timeout: number): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [file], { cwd: path.dirname(file), env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeout);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

describe('the documentation', () => {
  const { sources, runs, blocks } = programSources();
  let program: ts.Program;

  beforeAll(() => {
    program = ts.createProgram([...sources.keys()], compilerOptions, hostFor(sources, compilerOptions));
  });

  it('Operations lists every migration class the package exports, in order', () => {
    const page = readFileSync(path.join(__dirname, '..', '..', 'docs', 'operations.md'), 'utf8');
    const listed = page.slice(page.indexOf('The classes, in order:'), page.indexOf('Their statements are')).match(/Durable\w+\d{13}/g);
    expect(listed).toEqual(DURABLE_MIGRATIONS.map((m) => m.name));
  });

  it('says what every code block is: a language on every fence, and only known doc-test markers', () => {
    const problems = blocks.filter((b) => b.problem).map((b) => `${b.doc}:${b.line}: ${b.problem}`);
    expect(problems).toEqual([]);
    const typescript = blocks.filter((b) => b.lang === 'ts');
    // nearly every TypeScript block compiles; those that do not say why
    expect(typescript.filter((b) => b.kind === 'skip').length).toBeLessThan(typescript.length / 10);
  });

  it('every TypeScript block compiles with strict TypeScript, as a file or as a fragment in the examples’ scope', () => {
    const compiled = new Set([...sources.values()].map((s) => s.block));
    const missed = blocks.filter((b) => (b.kind === 'file' || b.kind === 'fragment') && !compiled.has(b));
    expect(missed.map((b) => `${b.doc}:${b.line}`)).toEqual([]);
    const problems = [...new Set(ts.getPreEmitDiagnostics(program).map((d) => located(d, sources)))];
    expect(problems).toEqual([]);
  }, 300_000);

  it('every relative import of a TypeScript block names a .js file, as an ES module app (what `nest new` makes) needs', () => {
    const bare = blocks
      .filter((b) => b.kind !== 'other')
      .flatMap((b) =>
        [...b.code.matchAll(/^(?:import|export)\b[^;]*?\bfrom\s+'(\.{1,2}\/[^']*)'/gm)]
          .filter(([, spec]) => !spec.endsWith('.js'))
          .map(([, spec]) => `${b.doc}:${b.line}: '${spec}'`),
      );
    expect(bare).toEqual([]);
  });

  it('the README tutorial, compiled and run as a fresh app on a database of its own, completes as the README says', async () => {
    expect(runs.map((r) => `${r.block.doc} ${r.block.fileName}`)).toEqual(['README.md tutorial.ts']);
    const [{ dir }] = runs;
    const out = mkdtempSync(path.join(tmpdir(), 'nestjs-durable-tutorial-'));
    const database = `doc_tutorial_${randomBytes(5).toString('hex')}`;
    await sql(`create database ${database}`);
    const url = new URL(databaseUrl());
    url.pathname = `/${database}`;
    try {
      // the page's files, emitted (CommonJS, as a Nest CLI app) into a folder of their own
      const write = (file: string, text: string) => {
        const target = path.join(out, path.relative(VIRTUAL, file));
        mkdirSync(path.dirname(target), { recursive: true });
        writeFileSync(target, text);
      };
      for (const file of [...sources.keys()].filter((f) => path.dirname(f) === dir)) {
        const emitted = program.emit(program.getSourceFile(file), write);
        expect(emitted.diagnostics.map((d) => located(d, sources))).toEqual([]);
      }
      const ran = await node(
        path.join(out, path.relative(VIRTUAL, dir), 'tutorial.js'),
        { ...process.env, DATABASE_URL: url.toString(), NODE_PATH: path.join(ROOT, 'node_modules'), NO_COLOR: '1' },
        180_000,
      );
      const lines = ran.stdout
        .trim()
        .split('\n')
        .filter((l) => !l.startsWith('[Nest]')); // the app's own log lines, on stdout too
      if (ran.code !== 0 || lines.length !== 4)
        throw new Error(`the tutorial ended with code ${ran.code}\n--- stdout\n${ran.stdout}\n--- stderr\n${ran.stderr}`);
      expect(lines[0]).toMatch(/^(pending|running) (fetch|summarize)$/); // the README: e.g. 'pending' 'fetch'
      expect(lines.slice(1)).toEqual([`completed { summary: 'Durable workflows live in Postgres.' }`, 'true', '0']);
      const client = new Client({ connectionString: url.toString() });
      await client.connect();
      try {
        const { rows } = await client.query('select title, summary from articles');
        expect(rows).toEqual([{ title: 'Hello', summary: 'Durable workflows live in Postgres.' }]);
        const { rows: durableRuns } = await client.query('select workflow, key, status from durable.runs');
        expect(durableRuns).toEqual([{ workflow: 'process_article', key: expect.stringMatching(/^article:\d+$/), status: 'completed' }]);
      } finally {
        await client.end();
      }
    } finally {
      rmSync(out, { recursive: true, force: true });
      await sql(`drop database if exists ${database} with (force)`);
    }
  }, 300_000);
});
