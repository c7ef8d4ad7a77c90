#!/usr/bin/env node
// npm pack / npm publish lifecycle for the library (`prepack` and `postpack` in package.json).
//
//   prepack   makes dist/ match src/ (builds when src or migrations are newer, removes compiled files
//             whose source is gone), then writes the package.json that ships: this one without
//             `scripts`, `workspaces` and `devDependencies` (the original is kept in .pack/).
//   postpack  puts the original package.json back.
//
// dist/ is rebuilt in place only when stale, never deleted: the test suite's child processes load
// it while test/packaging runs `npm pack`.
const fs = require('fs');
const path = require('path');
const { execFileSync } = require('child_process');

const ROOT = path.resolve(__dirname, '..');
const MANIFEST = path.join(ROOT, 'package.json');
const BACKUP = path.join(ROOT, '.pack', 'package.json');
const DEV_ONLY = ['scripts', 'workspaces', 'devDependencies'];

// package.json is only ever replaced by a rename, never rewritten in place: the suite's child
// processes read it (Node looks up the package's "type") while test/packaging packs, and a file
// being written can be read empty or cut short.
function restore() {
  if (!fs.existsSync(BACKUP)) return false;
  fs.renameSync(BACKUP, MANIFEST);
  return true;
}

function replaceManifest(text) {
  const next = `${MANIFEST}.next`;
  fs.writeFileSync(next, text);
  fs.renameSync(next, MANIFEST);
}

function walk(dir, out = []) {
  if (!fs.existsSync(dir)) return out;
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) walk(p, out);
    else out.push(p);
  }
  return out;
}

/** Builds when a source is newer than dist/src/index.js; removes outputs whose source is gone. */
function syncDist() {
  const sources = ['src', 'migrations'].flatMap((d) => walk(path.join(ROOT, d))).filter((f) => f.endsWith('.ts'));
  const entry = path.join(ROOT, 'dist', 'src', 'index.js');
  const newest = Math.max(...sources.map((f) => fs.statSync(f).mtimeMs));
  if (!fs.existsSync(entry) || fs.statSync(entry).mtimeMs < newest) {
    execFileSync(process.execPath, [require.resolve('typescript/bin/tsc', { paths: [ROOT] }), '-p', 'tsconfig.build.json'], {
      cwd: ROOT,
      stdio: 'inherit',
    });
  }
  for (const d of ['src', 'migrations']) {
    for (const out of walk(path.join(ROOT, 'dist', d))) {
      const rel = path.relative(path.join(ROOT, 'dist'), out).replace(/(\.d\.ts|\.js\.map|\.js)$/, '.ts');
      if (!fs.existsSync(path.join(ROOT, rel))) fs.rmSync(out);
    }
  }
}

const step = process.argv[2];
if (step === 'prepack') {
  if (restore()) console.error('pack-manifest: restored package.json left over from an interrupted pack');
  syncDist();
  const manifest = JSON.parse(fs.readFileSync(MANIFEST, 'utf8'));
  fs.mkdirSync(path.dirname(BACKUP), { recursive: true });
  fs.copyFileSync(MANIFEST, BACKUP);
  for (const key of DEV_ONLY) delete manifest[key];
  replaceManifest(JSON.stringify(manifest, null, 2) + '\n');
} else if (step === 'postpack') {
  restore();
} else {
  console.error('usage: pack-manifest.js prepack|postpack');
  process.exit(2);
}
