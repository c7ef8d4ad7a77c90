/**
 * The fenced code blocks of the README and docs/*.md, with what each one is for.
 *
 * A TypeScript block is one of three kinds, told by an HTML comment on the line before its fence:
 *
 * - no comment: a **file** — complete as shown (its imports included). A first line
 *   `// name.ts` names it, so other blocks of the same page import it (`./name`); pages other
 *   than the README may also import the README tutorial's files.
 * - `<!-- doc-test: fragment -->`: lines that sit inside a step, a service method or a module the
 *   page has shown; compiled as a module in which the names the pages' examples share are declared
 *   (`durable`, `ctx`, `dataSource`, the tutorial's classes, …; see fragment-scope.ts).
 * - `<!-- doc-test: skip (why) -->`: not meant to compile (a signature, a type shown for reading).
 *
 * `<!-- doc-test: run -->` marks a file that the test also compiles to JavaScript and runs
 * against PostgreSQL. Blocks in another language (`sh`, `sql`, `mermaid`, `js` for a CommonJS config
 * file, `json`) say so by their tag;
 * a fence without a language is refused.
 */
import { readdirSync, readFileSync } from 'fs';
import * as path from 'path';

/** One fenced block. */
export interface CodeBlock {
  /** The page, relative to the repository (`README.md`, `docs/keys.md`). */
  doc: string;
  /** 1-based line of the opening fence. */
  line: number;
  lang: string;
  /** The block's text (indentation of the fence removed), ending with a newline. */
  code: string;
  kind: 'file' | 'fragment' | 'skip' | 'other';
  /** `// name.ts` on the first line of a file block. */
  fileName?: string;
  /** `<!-- doc-test: run -->`. */
  run: boolean;
  /** The marker comment's text, when there is one. */
  marker?: string;
  /** A problem with the block's markup (unknown marker, no language, …). */
  problem?: string;
}

const TS_LANGS = new Set(['ts', 'typescript']);
const OTHER_LANGS = new Set(['sh', 'sql', 'mermaid', 'js', 'json']);
const MARKER = /^<!--\s*doc-test:\s*(.*?)\s*-->$/;

/** Pages whose blocks are checked: the README and every page of docs/. */
export function documentationPages(root: string): string[] {
  const docs = readdirSync(path.join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/${f}`);
  return ['README.md', ...docs];
}

/** The blocks of one page. */
export function codeBlocks(root: string, doc: string): CodeBlock[] {
  const lines = readFileSync(path.join(root, doc), 'utf8').split('\n');
  const blocks: CodeBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)```(\S*)\s*$/.exec(lines[i]);
    if (!open) continue;
    const [, indent, lang] = open;
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length && !new RegExp(`^${indent}\`\`\`\\s*$`).test(lines[j]); j++)
      body.push(lines[j].startsWith(indent) ? lines[j].slice(indent.length) : lines[j]);
    const before = lines
      .slice(0, i)
      .reverse()
      .find((l) => l.trim() !== '');
    const marker = before && MARKER.exec(before.trim())?.[1];
    blocks.push(classify({ doc, line: i + 1, lang, code: body.join('\n') + '\n', marker }));
    i = j;
  }
  return blocks;
}

function classify(b: Pick<CodeBlock, 'doc' | 'line' | 'lang' | 'code' | 'marker'>): CodeBlock {
  const fileName = /^\/\/ ([\w.-]+\.ts)\s*$/.exec(b.code.split('\n')[0])?.[1];
  const base = { ...b, fileName, run: false };
  if (!b.lang) return { ...base, kind: 'other', problem: 'a fence without a language: tag it (ts, sh, sql, mermaid, js, json)' };
  if (!TS_LANGS.has(b.lang)) {
    if (!OTHER_LANGS.has(b.lang)) return { ...base, kind: 'other', problem: `unknown language "${b.lang}"` };
    return b.marker === undefined ? { ...base, kind: 'other' } : { ...base, kind: 'other', problem: 'a doc-test marker on a block that is not TypeScript' };
  }
  if (b.marker === undefined) return { ...base, kind: 'file' };
  if (b.marker === 'fragment') return { ...base, kind: 'fragment' };
  if (b.marker === 'run')
    return fileName ? { ...base, kind: 'file', run: true } : { ...base, kind: 'file', problem: 'a run block needs a `// name.ts` first line' };
  if (/^skip \(.+\)$/.test(b.marker)) return { ...base, kind: 'skip' };
  return { ...base, kind: 'skip', problem: `unknown marker "doc-test: ${b.marker}" (fragment, run or skip (why))` };
}
