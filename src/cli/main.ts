import 'reflect-metadata';
import { runCli } from './cli';

// The `nestjs-durable` command, started by bin/nestjs-durable.js (package.json "bin"): see docs/cli.md.

// a reader that stops early (`nestjs-durable runs list --json | head`) closes the pipe: the rest
// of the output is not wanted, and the command ends quietly (an action is done by the time it writes)
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code !== 'EPIPE') throw err;
  process.exit(process.exitCode ?? 0);
});
void runCli(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(`${text}\n`),
  stderr: (text) => process.stderr.write(`${text}\n`),
  env: process.env,
}).then((code) => {
  process.exitCode = code;
});
