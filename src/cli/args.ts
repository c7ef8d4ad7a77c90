import { UsageError } from '../errors';
import type { ValidationError } from 'class-validator';
import { MAX_TIMER_MS, tryParseDuration } from '../domain/duration';
import { keyProblem, nameProblem, problem, textProblem, uuidProblem } from '../domain/validation';
import { workflowRefProblem } from '../domain/filters';

/** Options that take no value. */
const SWITCHES = new Set(['json', 'help', 'version', 'print-sql', 'buffer', 'concurrently', 'transaction-pooler']);

/** A command line split into words (command and arguments) and `--options`. */
export interface ParsedArgs {
  words: string[];
  /** Each option given, with its value (the last one given, for an option given more than once). */
  options: Map<string, string | true>;
  /** The options given more than once (`-h` and `--help` are one option), in the order of their second use. */
  repeated: string[];
}

/**
 * Splits `argv`: `--name value`, `--name=value`, switches (`--json`), `--` ends the options.
 * `valued`: the names of the options that take a value (of any command); an option of no command
 * takes none, so that a misspelt one (`--jsn <id>`) is reported as unknown rather than eat the word
 * after it or be said to need a value.
 */
export function parseArgs(argv: string[], valued: ReadonlySet<string>): ParsedArgs {
  const words: string[] = [];
  const options = new Map<string, string | true>();
  const repeated: string[] = [];
  const set = (name: string, value: string | true) => {
    if (options.has(name) && !repeated.includes(name)) repeated.push(name);
    options.set(name, value);
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--') {
      words.push(...argv.slice(i + 1));
      break;
    }
    if (arg === '-h') {
      set('help', true);
      continue;
    }
    if (!arg.startsWith('--') || arg.length === 2) {
      words.push(arg);
      continue;
    }
    const eq = arg.indexOf('=');
    const name = arg.slice(2, eq < 0 ? undefined : eq);
    if (SWITCHES.has(name)) {
      if (eq >= 0) throw new UsageError(`--${name} takes no value`);
      set(name, true);
    } else if (eq >= 0) set(name, arg.slice(eq + 1));
    else if (!valued.has(name))
      set(name, true); // unknown: refused by the command's check
    else {
      const value = argv[i + 1];
      if (value === undefined || value.startsWith('--')) throw new UsageError(`--${name} needs a value`);
      set(name, value);
      i++;
    }
  }
  return { words, options, repeated };
}

/** The value of option `name` as given (undefined when absent). */
export function stringOption(args: ParsedArgs, name: string): string | undefined {
  const value = args.options.get(name);
  return value === true ? undefined : value;
}

/** Option `name` as a whole number from 1 to `max` in decimal digits (not `0x10`, `1e2`), or undefined. */
export function countOption(args: ParsedArgs, name: string, max: number): number | undefined {
  const value = stringOption(args, name);
  if (value === undefined) return undefined;
  const n = /^\d+$/.test(value) ? Number(value) : NaN;
  if (!Number.isInteger(n) || n < 1 || n > max) throw new UsageError(`--${name} must be a whole number from 1 to ${max}, got ${JSON.stringify(value)}`);
  return n;
}

/**
 * Option `name` as a duration in milliseconds (`'30s'`, `'2m'`, `1500`) from `minMs` to `maxMs`
 * (default: 1 ms to the longest a timer can wait, about 24.8 days), or undefined.
 */
export function durationOption(args: ParsedArgs, name: string, minMs = 1, maxMs = MAX_TIMER_MS): number | undefined {
  const value = stringOption(args, name);
  if (value === undefined) return undefined;
  const ms = tryParseDuration(/^\d+$/.test(value) ? Number(value) : value);
  if (ms === undefined || ms < minMs || ms > maxMs) {
    throw new UsageError(`--${name} must be a duration such as '30s' or '2m', from ${minMs}ms to ${maxMs}ms, got ${JSON.stringify(value)}`);
  }
  return ms;
}

/** Argument `what` parsed as JSON. */
export function jsonArgument(text: string, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new UsageError(`${what} must be JSON (e.g. '{"approved":true}' or '"text"'), got ${JSON.stringify(text)}`);
  }
}

/** What a value given as `what` (an argument or option) must be: the check of the value the API takes, with `what` as its name. */
export type ValueCheck = (value: string, what: string) => ValidationError | undefined;

/** A run id (a UUID). */
export const RUN_ID: ValueCheck = (value, what) => uuidProblem(value, what);
/** A key (1 to 255 bytes of UTF-8), told without the API's "use null for no key", which a command line cannot give. */
export const KEY: ValueCheck = (value, what) => keyProblem(value, what, false);
/** A name: of an event, an input, a node, an activity kind, a `by` (1 to 255 bytes). */
export const NAME: ValueCheck = (value, what) => nameProblem(value, what);
/** A cancel reason (1 to 1000 bytes). */
export const REASON: ValueCheck = (value, what) => textProblem(value, what, 1000);
/** A workflow name (non-empty). */
export const WORKFLOW: ValueCheck = (value, what) =>
  value === '' ? problem(what, value, 'isWorkflow', `${what} must be a workflow name (a non-empty string)`) : workflowRefProblem(value, false, what);

/** `value`, given as `what`, when `check` passes it; else a usage error naming `what` and the value. */
export function checked(value: string, what: string, check: ValueCheck): string {
  const bad = check(value, what);
  if (bad) throw new UsageError(`${Object.values(bad.constraints ?? {}).join('; ')}, got ${JSON.stringify(value)}`);
  return value;
}

/** Option `name` when `check` passes it, or undefined when absent; else a usage error. */
export function checkedOption(args: ParsedArgs, name: string, check: ValueCheck): string | undefined {
  const value = stringOption(args, name);
  return value === undefined ? undefined : checked(value, `--${name}`, check);
}
