import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

/**
 * The layout rules of docs/architecture.md, checked on the source: each folder of `src/` imports
 * only its own files and folders of a lower layer, no file imports itself back through others (no
 * cycle), and no file is longer than 400 lines.
 */
const SRC = resolve(__dirname, '../../src');

/** Layer of each folder of src/ (files at the top of src/ are the module itself). */
export const LAYERS: Record<string, number> = {
  errors: 0,
  domain: 1,
  options: 2,
  definition: 3,
  store: 4,
  core: 5,
  observe: 6,
  runs: 7,
  flows: 7,
  schedules: 8,
  worker: 8,
  health: 9,
  nest: 9,
  '.': 11,
  // the optional entry points build on the module itself (DurableModule, DurableService); the
  // package root never imports them
  dashboard: 12,
  testing: 12,
  cli: 12,
};

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sourceFiles(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

/** Relative imports of a file (type-only ones too), as absolute paths without extension. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specs = [...text.matchAll(/(?:from|import|require)\s*\(?\s*'(\.{1,2}\/[^']+)'/g)].map((m) => m[1]);
  return specs.map((s) => resolve(dirname(file), s)).filter((p) => p.startsWith(SRC));
}

/** The folder of src/ a path is in ('.' for the top). */
function folderOf(path: string): string {
  const rel = relative(SRC, path);
  return rel.includes('/') ? rel.split('/')[0] : '.';
}

/** A module path as a file of the graph (`x` is `x.ts` or `x/index.ts`). */
function fileOf(path: string, files: Set<string>): string {
  return files.has(`${path}.ts`) ? `${path}.ts` : `${path}/index.ts`;
}

const files = sourceFiles(SRC);
const graph = new Map(files.map((f) => [f, importsOf(f).map((p) => fileOf(p, new Set(files)))]));

describe('layout', () => {
  it('every folder of src/ has a layer', () => {
    const folders = [...new Set(files.map(folderOf))].filter((f) => !(f in LAYERS));
    expect(folders).toEqual([]);
  });

  it('imports point down the layers: a folder imports its own files and lower layers only', () => {
    const upward = files.flatMap((f) =>
      graph
        .get(f)!
        .filter((to) => folderOf(to) !== folderOf(f) && LAYERS[folderOf(to)] >= LAYERS[folderOf(f)])
        .map((to) => `${relative(SRC, f)} → ${relative(SRC, to)}`),
    );
    expect(upward).toEqual([]);
  });

  it('no import cycle between files', () => {
    const cycles: string[] = [];
    const state = new Map<string, 'open' | 'done'>();
    const visit = (f: string, path: string[]) => {
      if (state.get(f) === 'done') return;
      if (state.get(f) === 'open') {
        cycles.push([...path.slice(path.indexOf(f)), f].map((p) => relative(SRC, p)).join(' → '));
        return;
      }
      state.set(f, 'open');
      for (const to of graph.get(f) ?? []) visit(to, [...path, f]);
      state.set(f, 'done');
    };
    for (const f of files) visit(f, []);
    expect(cycles).toEqual([]);
  });

  it('no file of src/ is longer than 400 lines', () => {
    const long = files.filter((f) => readFileSync(f, 'utf8').split('\n').length > 400).map((f) => relative(SRC, f));
    expect(long).toEqual([]);
  });
});
