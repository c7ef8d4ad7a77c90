import 'reflect-metadata';
import { runCli } from './cli';

// The `nestjs-durable` command, started by bin/nestjs-durable.js (package.json "bin"): see docs/cli.md.

// a reader that stops early (`nestjs-durable runs list --json | head`) closes the pipe: the rest
// of the output is not wanted; the command ends quietly, with its own exit status
let readerGone = false;
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code !== 'EPIPE') throw err;
  readerGone = true;
});
void runCli(process.argv.slice(2), {
  stdout: (text) => !readerGone && process.stdout.write(`${text}\n`),
  stderr: (text) => process.stderr.write(`${text}\n`),
  env: process.env,
}).then((code) => {
  process.exitCode = code;
});
