import { execFileSync, spawn } from 'child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import path from 'path';
import { waitFor } from '../support/wait';

/**
 * scripts/pack-manifest.js (`prepack` / `postpack`) in a scratch copy of the repository's layout: the
 * manifest it ships, the original put back, and package.json never readable half written (the test
 * suite's child processes read it while test/packaging runs `npm pack`).
 */

const SCRIPT = path.join(__dirname, '..', '..', 'scripts', 'pack-manifest.js');

function scratchRoot() {
  const root = mkdtempSync(path.join(tmpdir(), 'pack-manifest-'));
  mkdirSync(path.join(root, 'scripts'));
  copyFileSync(SCRIPT, path.join(root, 'scripts', 'pack-manifest.js'));
  // dist/ newer than its one source: prepack builds nothing and removes nothing
  mkdirSync(path.join(root, 'src'));
  writeFileSync(path.join(root, 'src', 'index.ts'), '');
  utimesSync(path.join(root, 'src', 'index.ts'), new Date(0), new Date(0));
  mkdirSync(path.join(root, 'dist', 'src'), { recursive: true });
  writeFileSync(path.join(root, 'dist', 'src', 'index.js'), '');
  const manifest = {
    name: 'scratch',
    version: '1.0.0',
    type: 'commonjs',
    scripts: { test: 'jest' },
    workspaces: ['bench'],
    devDependencies: { jest: '^30.0.0' },
    dependencies: { pg: '^8.0.0' },
    // a large manifest takes long enough to write that a reader would catch it half written
    description: 'x'.repeat(400_000),
  };
  const manifestPath = path.join(root, 'package.json');
  writeFileSync(manifestPath, JSON.stringify(manifest, null, 2) + '\n');
  const step = (name: 'prepack' | 'postpack') => execFileSync(process.execPath, [path.join(root, 'scripts', 'pack-manifest.js'), name]);
  return { root, manifestPath, step };
}

describe('pack-manifest', () => {
  let root: string;
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('prepack ships package.json without scripts, workspaces and devDependencies; postpack puts the original back byte for byte', () => {
    const s = scratchRoot();
    root = s.root;
    const original = readFileSync(s.manifestPath, 'utf8');
    s.step('prepack');
    const shipped = JSON.parse(readFileSync(s.manifestPath, 'utf8'));
    expect(Object.keys(shipped)).toEqual(['name', 'version', 'type', 'dependencies', 'description']);
    expect(readFileSync(path.join(s.root, '.pack', 'package.json'), 'utf8')).toBe(original);
    s.step('postpack');
    expect(readFileSync(s.manifestPath, 'utf8')).toBe(original);
    expect(existsSync(path.join(s.root, '.pack', 'package.json'))).toBe(false);
  });

  it('a reader in another process never finds package.json empty or cut short while prepack and postpack replace it', async () => {
    const s = scratchRoot();
    root = s.root;
    const stop = path.join(s.root, 'stop');
    // says it is ready, then reads and parses package.json until the stop file appears; prints reads and failures
    const reader = spawn(
      process.execPath,
      [
        '-e',
        `const fs = require('fs'); let reads = 0, bad = 0;
         console.log('ready');
         while (!fs.existsSync(${JSON.stringify(stop)})) {
           try { JSON.parse(fs.readFileSync(${JSON.stringify(s.manifestPath)}, 'utf8')); } catch { bad++; }
           reads++;
         }
         console.log(JSON.stringify({ reads, bad }));`,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let out = '';
    reader.stdout.on('data', (d: Buffer) => (out += d.toString()));
    // 'close': the process ended and its output was read to the end
    const closed = new Promise<void>((resolve) => reader.once('close', () => resolve()));
    await waitFor(() => out.startsWith('ready'), { timeout: 30_000 });
    try {
      for (let cycle = 0; cycle < 20; cycle++) {
        s.step('prepack');
        s.step('postpack');
      }
    } finally {
      writeFileSync(stop, '');
      await closed;
    }
    const { reads, bad } = JSON.parse(out.slice('ready'.length)) as { reads: number; bad: number };
    expect(reads).toBeGreaterThan(0);
    expect(bad).toBe(0);
  });
});
