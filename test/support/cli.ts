import { expect } from '@jest/globals';
import { execFile } from 'child_process';
import * as path from 'path';
import { databaseUrl } from './db';
import { runCli } from '../../src/cli/cli';

/** The package's bin (`nestjs-durable`), which runs the built CLI. */
export const BIN = path.join(__dirname, '..', '..', 'bin', 'nestjs-durable.js');

/** What a CLI process ended with. */
export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs the CLI in this process, as bin/nestjs-durable.js runs it (`runCli` with the command line,
 * stdout, stderr and the environment) without a process of its own: a command that connects boots
 * the module in a few milliseconds instead of loading Nest again. DATABASE_URL is the test database
 * unless `env` says otherwise. The bin itself, as a process, is {@link cliProcess}.
 */
export async function cli(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  const stdout: string[] = [];
  const stderr: string[] = [];
  const code = await runCli(args, {
    stdout: (text) => stdout.push(`${text}\n`),
    stderr: (text) => stderr.push(`${text}\n`),
    env: { ...process.env, DATABASE_URL: databaseUrl(), ...env },
  });
  return { code, stdout: stdout.join(''), stderr: stderr.join('') };
}

/** Runs the binary as a process of its own; DATABASE_URL is the test database unless `env` says otherwise. */
export function cliProcess(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { env: { ...process.env, DATABASE_URL: databaseUrl(), ...env }, timeout: 60_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : null) : 0, stdout, stderr }),
    );
  });
}

/** Expects exit `code` and one line on stderr starting `error <errorCode>:`. */
export function expectError(r: CliResult, code: number, errorCode: string): void {
  expect(r.code).toBe(code);
  expect(r.stdout).toBe('');
  expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
  expect(r.stderr).toMatch(new RegExp(`^error ${errorCode}: `));
}
