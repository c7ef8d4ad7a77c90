import { ChildProcess, spawn } from 'child_process';
import { existsSync } from 'fs';
import * as path from 'path';
import { databaseUrl } from './db';
import { currentScope } from './phase';
import { waitFor } from './wait';

const ROOT = path.resolve(__dirname, '..', '..');
export const DIST_ENTRY = path.join(ROOT, 'dist', 'src', 'index.js');

export interface NodeProcess {
  proc: ChildProcess;
  nodeId: string;
  /** stdout lines so far. */
  lines: string[];
  stderr: string[];
  exitCode: number | null | undefined;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Resolves with the first stdout line matching `re` (already printed or future). */
  waitForLine(re: RegExp, timeout?: number): Promise<string>;
  linesMatching(re: RegExp): string[];
  signal(sig: NodeJS.Signals): void;
  /** Sends a command line on stdin (fixtures understand a few, e.g. `start <workflow> <json>`). */
  send(line: string): void;
}

/** Children and whether they belong to one test (spawned in a test or beforeEach) or to the file (beforeAll). */
const children: { node: NodeProcess; scope: 'test' | 'file' }[] = [];

const verbose = process.env.DURABLE_TEST_LOGS === '1';

export interface SpawnOptions {
  schema: string;
  nodeId: string;
  /** Fixture file under test/fixtures (default node.js). */
  fixture?: string;
  env?: Record<string, string | undefined>;
  /** Wait for the READY line (default true). */
  waitReady?: boolean;
  readyTimeout?: number;
}

/** Spawns `node test/fixtures/<fixture>` booting a Nest app on the compiled library (dist/). */
export async function spawnNode(opts: SpawnOptions): Promise<NodeProcess> {
  if (!existsSync(DIST_ENTRY)) {
    throw new Error(`${DIST_ENTRY} is missing: run \`npm run build\` (the test script does) before the multi-process tests`);
  }
  const fixture = path.join(ROOT, 'test', 'fixtures', opts.fixture ?? 'node.js');
  const proc = spawn(process.execPath, [fixture], {
    cwd: ROOT,
    env: {
      ...process.env,
      DATABASE_URL: databaseUrl(),
      DURABLE_SCHEMA: opts.schema,
      DURABLE_NODE_ID: opts.nodeId,
      ...opts.env,
    },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  const stderr: string[] = [];
  let buf = '';
  proc.stdout!.setEncoding('utf8');
  proc.stdout!.on('data', (chunk: string) => {
    buf += chunk;
    let i: number;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      lines.push(line);
      if (verbose) process.stderr.write(`[${opts.nodeId}] ${line}\n`);
    }
  });
  proc.stderr!.setEncoding('utf8');
  proc.stderr!.on('data', (chunk: string) => {
    stderr.push(chunk);
    if (verbose) process.stderr.write(`[${opts.nodeId} stderr] ${chunk}`);
  });
  proc.stdin!.on('error', () => undefined);
  const node: NodeProcess = {
    proc,
    nodeId: opts.nodeId,
    lines,
    stderr,
    exitCode: undefined,
    exited: new Promise((resolve) => {
      proc.on('exit', (code, signal) => {
        node.exitCode = code;
        resolve({ code, signal });
      });
    }),
    async waitForLine(re, timeout = 20_000) {
      return waitFor(
        () => {
          const found = lines.find((l) => re.test(l));
          if (found) return found;
          if (node.exitCode !== undefined) throw new Error(`${opts.nodeId} exited (${node.exitCode}) before printing ${re}: ${stderr.join('').slice(-3000)}`);
          return undefined;
        },
        { timeout, message: `${opts.nodeId} prints ${re} (stdout: ${lines.slice(-5).join(' | ')}; stderr: ${stderr.join('').slice(-1500)})` },
      );
    },
    linesMatching: (re) => lines.filter((l) => re.test(l)),
    signal: (sig) => {
      if (node.exitCode === undefined && proc.pid) process.kill(proc.pid, sig);
    },
    send: (line) => {
      proc.stdin!.write(`${line}\n`);
    },
  };
  children.push({ node, scope: currentScope() });
  if (opts.waitReady !== false) await node.waitForLine(/^READY\b/, opts.readyTimeout ?? 60_000);
  return node;
}

/**
 * Kills (SIGCONT then SIGKILL) the children still alive: those of the current test (`'test'`, after
 * each test) or all of them (`'all'`, after the file).
 */
export async function killAllChildren(which: 'test' | 'all' = 'all'): Promise<void> {
  const list: NodeProcess[] = [];
  for (let i = children.length - 1; i >= 0; i--) {
    if (which === 'all' || children[i].scope === 'test') list.push(children.splice(i, 1)[0].node);
  }
  for (const c of list) {
    if (c.exitCode === undefined && c.proc.pid) {
      try {
        process.kill(c.proc.pid, 'SIGCONT');
        process.kill(c.proc.pid, 'SIGKILL');
      } catch {
        /* already gone */
      }
    }
  }
  await Promise.all(list.map((c) => c.exited));
}
