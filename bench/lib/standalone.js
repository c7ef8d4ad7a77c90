'use strict';
// Shared by the standalone scripts (keys.js, statements.js): the library as built in dist/, a
// one-step workflow class written the way a plain-JS user would (decorators applied by hand), and a
// Nest application context around DurableModule.
require('reflect-metadata');
const { Module } = require('@nestjs/common');
const { NestFactory } = require('@nestjs/core');
const { DEFAULT_URL } = require('./db');

/** DATABASE_URL, else the machine's local Postgres. */
const URL = process.env.DATABASE_URL || DEFAULT_URL;
/** nestjs-durable from the repository root (`npm run build` first). */
const lib = require('../..');

/** A workflow `name` whose one step calls `onRun` (if given) and returns null. */
function oneStepWorkflow(name, options, onRun) {
  const C = class {
    async run() {
      if (onRun) onRun();
      return null;
    }
  };
  Object.defineProperty(C, 'name', { value: name });
  lib.Step()(C.prototype, 'run', Object.getOwnPropertyDescriptor(C.prototype, 'run'));
  lib.Workflow(name, options)(C);
  return C;
}

/** An application context with `DurableModule.forRoot({ url: URL, ...options })` and the workflows; resolves its DurableService too. */
async function bootDurable(options, workflows) {
  class BenchStandaloneModule {}
  Module({ imports: [lib.DurableModule.forRoot({ url: URL, ...options })], providers: workflows })(BenchStandaloneModule);
  const app = await NestFactory.createApplicationContext(BenchStandaloneModule, { logger: ['error', 'warn'] });
  return { app, durable: app.get(lib.DurableService) };
}

module.exports = { URL, lib, oneStepWorkflow, bootDurable };
