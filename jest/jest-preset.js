// Jest preset for an app that tests its workflows with `nestjs-durable/testing`, on NestJS 11 or 12,
// CommonJS or ES module app, on every Node version the module supports:
//
//   "jest": { "preset": "nestjs-durable/jest", "rootDir": "src", "testRegex": ".*\\.spec\\.ts$" }
//
// Jest runs every file as CommonJS: TypeScript through ts-jest, and the ES modules in node_modules
// (NestJS 12 ships ES modules only) through esm-to-cjs.js, since Jest below Node 24.9 cannot
// require() an ES module. The app's settings win over these (Jest merges `transform` and
// `moduleNameMapper` key by key).
'use strict';

module.exports = {
  testEnvironment: 'node',
  transform: {
    // the app's TypeScript, with its tsconfig.json but compiled to CommonJS: an ES module app's
    // `module: nodenext` would make ES modules of them, which Jest cannot run without
    // --experimental-vm-modules. `bundler` resolution (for the type check) because with `nodenext`
    // TypeScript still emits ES modules for the .ts files of a "type": "module" package. TypeScript
    // 5 refuses `bundler` beside `commonjs`, so there ts-jest resolves the `node10` way, where the
    // `resolvePackageJsonExports: true` of a `nest new` tsconfig is an error (TS5098): `null` unsets
    // it and its `imports` twin, leaving each at the default of the resolution in use.
    '^.+\\.tsx?$': [
      'ts-jest',
      {
        tsconfig: { module: 'commonjs', moduleResolution: 'bundler', resolvePackageJsonExports: null, resolvePackageJsonImports: null },
      },
    ],
    // ES modules (.mjs, or .js of a "type": "module" package) to CommonJS; other files untouched
    '^.+\\.m?js$': require.resolve('./esm-to-cjs.js'),
  },
  // node_modules too: Jest skips transforming them by default, and they are where the ES modules are
  transformIgnorePatterns: [],
  // `import { X } from './x.js'` (how an ES module app imports its own .ts files) finds ./x.ts
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  // a test that creates a DurableTestEnv, applies migrations and waits for runs needs more than 5 s
  // on a busy machine; runUntilIdle's own timeout is 30 s
  testTimeout: 60000,
};
