/** Running commands and reading installs for the packaging test (test/packaging/install.spec.ts). */
import { spawn } from 'child_process';
import { existsSync, readdirSync, readFileSync } from 'fs';
import * as path from 'path';

const LOGS = process.env.DURABLE_TEST_LOGS === '1';

/** Runs `fn`, logging how long it took with DURABLE_TEST_LOGS=1. */
export async function step<T>(what: string, fn: () => Promise<T>): Promise<T> {
  const t0 = Date.now();
  try {
    return await fn();
  } finally {
    if (LOGS) process.stderr.write(`[packaging] ${what}: ${((Date.now() - t0) / 1000).toFixed(1)} s\n`);
  }
}

export interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The environment without what `npm test` sets for its script (npm_package_*, npm_lifecycle_*, local prefix…), keeping npm's cache. */
export function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (/^npm_/i.test(k) && !/^npm_config_(cache|registry|userconfig)$/i.test(k)) continue;
    if (k === 'INIT_CWD') continue;
    env[k] = v;
  }
  return { ...env, ...extra };
}

/** Runs a command to its end (killed at `timeout` ms); rejects with its output when it fails. */
export function run(cmd: string, args: string[], opts: { cwd: string; env?: NodeJS.ProcessEnv; timeout?: number; allowFailure?: boolean }): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: opts.cwd, env: opts.env ?? cleanEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeout ?? 240_000);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const ran = { code, stdout, stderr };
      if ((code === 0 || opts.allowFailure) && !signal) resolve(ran);
      else
        reject(
          new Error(
            `${cmd} ${args.join(' ')} (in ${opts.cwd}) ended with ${signal ?? `code ${code}`}\n--- stdout\n${stdout.slice(-6000)}\n--- stderr\n${stderr.slice(-6000)}`,
          ),
        );
    });
  });
}

/** Every file under `dir`, recursively. */
export function walk(dir: string, out: string[] = []): string[] {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) walk(p, out);
    else out.push(p);
  }
  return out;
}

/** The version of the first of `candidates` installed in the app at `app`. */
export function versionIn(app: string, ...candidates: string[]): string {
  for (const c of candidates) {
    const manifest = path.join(app, 'node_modules', c, 'package.json');
    if (existsSync(manifest)) return JSON.parse(readFileSync(manifest, 'utf8')).version;
  }
  throw new Error(`none of ${candidates.join(', ')} is installed in ${app}`);
}
