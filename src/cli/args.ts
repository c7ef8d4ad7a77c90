import { UsageError } from '../errors';
import { MAX_TIMER_MS, tryParseDuration } from '../domain/duration';

/** Options that take no value. */
const SWITCHES = new Set(['json', 'help', 'print-sql', 'buffer', 'concurrently', 'transaction-pooler']);

/** A command line split into words (command and arguments) and `--options`. */
export interface ParsedArgs {
  words: string[];
  options: Map<string, string | true>;
}

/** Splits `argv`: `--name value`, `--name=value`, switches (`--json`), `--` ends the options. */
export function parseArgs(argv: string[]): ParsedArgs {
  const words: string[] = [];
  const options = new Map<string, string | true>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--') {
      words.push(...argv.slice(i + 1));
      break;
    }
    if (arg === '-h') {
      options.set('help', true);
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
      options.set(name, true);
    } else if (eq >= 0) options.set(name, arg.slice(eq + 1));
    else {
      const value = argv[i + 1];
      if (value === undefined || value.startsWith('--')) throw new UsageError(`--${name} needs a value`);
      options.set(name, value);
      i++;
    }
  }
  return { words, options };
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
