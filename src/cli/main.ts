import 'reflect-metadata';
import { runCli } from './cli';

// The `nestjs-durable` command, started by bin/nestjs-durable.js (package.json "bin"): see docs/cli.md.
void runCli(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(`${text}\n`),
  stderr: (text) => process.stderr.write(`${text}\n`),
  env: process.env,
}).then((code) => {
  process.exitCode = code;
});
