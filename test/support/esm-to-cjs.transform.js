/* eslint-disable */
// Jest transform for ES modules in node_modules (NestJS 12, @nestjs/schedule 12, @nestjs/terminus 12,
// file-type, … ship ESM only).
//
// Outside Jest the library (CommonJS) loads them with Node's own require(esm) (Node ^20.19 / >=22.12);
// the child-process tests and test/packaging prove that path. Jest's module registry, though, only
// implements require(esm) itself on Node >= 24.9; below that it needs the file transformed to
// CommonJS. This does that with TypeScript's transpiler, for files Node would load as ESM (.mjs, or
// .js under a package.json with "type": "module"); every other file is returned untouched.
const fs = require('fs');
const path = require('path');
const crypto = require('crypto');
const ts = require('typescript');

const VERSION = crypto.createHash('sha256').update(fs.readFileSync(__filename)).update(ts.version).digest('hex');

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
    return crypto.createHash('sha256').update(VERSION).update('\0').update(filename).update('\0').update(source).digest('hex');
  },

  process(source, filename) {
    if (!isEsm(filename)) return { code: source };
    const cjsReady = source
      // what ESM spells with import.meta, CommonJS has as module-scope variables
      .replace(/\bimport\.meta\.url\b/g, 'require("url").pathToFileURL(__filename).href')
      .replace(/\bimport\.meta\.resolve\(/g, 'require.resolve(')
      .replace(/\bimport\.meta\.dirname\b/g, '__dirname')
      .replace(/\bimport\.meta\.filename\b/g, '__filename')
      // `const require = createRequire(import.meta.url)` would redeclare CommonJS's own `require`
      .replace(/^(\s*)(const|let|var)\s+require\s*=/gm, '$1$2 __esmRequire =');
    const { outputText } = ts.transpileModule(cjsReady, {
      fileName: filename,
      compilerOptions: {
        module: ts.ModuleKind.CommonJS,
        target: ts.ScriptTarget.ES2022,
        esModuleInterop: true,
        allowJs: true,
        sourceMap: false,
      },
    });
    return { code: outputText };
  },
};
