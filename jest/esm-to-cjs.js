// Jest transform for ES modules, part of the `nestjs-durable/jest` preset (jest-preset.js).
//
// NestJS 12 and its packages (and some of their dependencies) ship ES modules only. Node loads them
// from CommonJS code with its own require(esm) (Node ^20.19 / >=22.12), but Jest's module registry
// does that itself only on Node >= 24.9; below that, a test that loads them fails with "Must use
// import to load ES Module". This transform turns such files into CommonJS with TypeScript's
// transpiler: files Node would load as ES modules (.mjs, or .js under a package.json with
// "type": "module"); every other file is returned untouched.
/* global __filename */
'use strict';
const fs = require('fs');
const path = require('path');
const crypto = require('crypto');
const { createRequire } = require('module');

let typescript;
/** TypeScript's compiler API: the one beside this package, else the project's (strict installs). */
function ts() {
  if (typescript) return typescript;
  const candidates = [require, createRequire(path.join(process.cwd(), 'package.json'))];
  for (const from of candidates) {
    try {
      const found = from('typescript');
      if (typeof found.transpileModule === 'function') return (typescript = found);
    } catch {
      // try the next place
    }
  }
  throw new Error(
    'nestjs-durable/jest: turning ES modules into CommonJS for Jest needs the compiler API of TypeScript 5 or 6; ' +
      'install it with `npm install --save-dev typescript@5` (ts-jest 29 takes TypeScript 5 or 6).',
  );
}

const SELF = crypto.createHash('sha256').update(fs.readFileSync(__filename)).digest('hex');

const typeOfDir = new Map();
/** The "type" of the package.json nearest to `dir` ('commonjs' when none says otherwise). */
function packageType(dir) {
  let type = typeOfDir.get(dir);
  if (type !== undefined) return type;
  const manifest = path.join(dir, 'package.json');
  if (fs.existsSync(manifest)) {
    try {
      type = JSON.parse(fs.readFileSync(manifest, 'utf8')).type === 'module' ? 'module' : 'commonjs';
    } catch {
      type = 'commonjs';
    }
  } else {
    const parent = path.dirname(dir);
    type = parent === dir ? 'commonjs' : packageType(parent);
  }
  typeOfDir.set(dir, type);
  return type;
}

function isEsm(filename) {
  if (filename.endsWith('.mjs')) return true;
  if (filename.endsWith('.cjs')) return false;
  return packageType(path.dirname(filename)) === 'module';
}

module.exports = {
  getCacheKey(source, filename) {
    const hash = crypto.createHash('sha256').update(SELF).update('\0').update(filename).update('\0').update(source);
    // the compiler's version only matters for the files it compiles
    if (isEsm(filename)) hash.update('\0').update(ts().version);
    return hash.digest('hex');
  },

  process(source, filename) {
    if (!isEsm(filename)) return { code: source };
    const cjsReady = source
      // what ES modules spell with import.meta, CommonJS has as module-scope variables
      .replace(/\bimport\.meta\.url\b/g, 'require("url").pathToFileURL(__filename).href')
      .replace(/\bimport\.meta\.resolve\(/g, 'require.resolve(')
      .replace(/\bimport\.meta\.dirname\b/g, '__dirname')
      .replace(/\bimport\.meta\.filename\b/g, '__filename')
      // `const require = createRequire(import.meta.url)` would redeclare CommonJS's own `require`
      .replace(/^(\s*)(const|let|var)\s+require\s*=/gm, '$1$2 __esmRequire =');
    const compiler = ts();
    const { outputText } = compiler.transpileModule(cjsReady, {
      fileName: filename,
      compilerOptions: {
        module: compiler.ModuleKind.CommonJS,
        target: compiler.ScriptTarget.ES2022,
        esModuleInterop: true,
        allowJs: true,
        sourceMap: false,
      },
    });
    return { code: outputText };
  },
};
