import { UNSTORABLE_RE } from './validation';

/** A failure as stored in `runs.error`. */
export interface StoredError {
  name: string;
  message: string;
  code?: string;
  stack?: string;
  [extra: string]: unknown;
}

/** NUL and unpaired UTF-16 surrogates (Postgres cannot store them) become U+FFFD. */
const storable = (s: string): string => s.replace(new RegExp(UNSTORABLE_RE.source, 'g'), '\uFFFD');

/**
 * Turns anything thrown into a JSON-safe, storable {@link StoredError}: an `Error`, or an object
 * shaped like one (a string `message`; `name`, `code` and `stack` kept when they are strings), by
 * its fields; anything else (a string, a number, another object) as the message.
 */
export function serializeError(err: unknown, extra: Record<string, unknown> = {}): StoredError {
  try {
    return serialized(err, extra);
  } catch {
    // a proxy whose traps throw, even for instanceof
    return { name: 'Error', message: '[a value that cannot be read]', ...extra };
  }
}

function serialized(err: unknown, extra: Record<string, unknown>): StoredError {
  if (err instanceof Error || isErrorLike(err)) {
    let fields: { name?: unknown; message: unknown; code?: unknown; stack?: unknown };
    try {
      const { name, message, code, stack } = err as typeof fields;
      fields = { name, message, code, stack };
    } catch {
      // a getter that throws
      fields = { message: '[a value that cannot be read]' };
    }
    const { name, message, code, stack } = fields;
    return {
      name: typeof name === 'string' || err instanceof Error ? storable(safeString(name)) : 'Error',
      message: storable(safeString(message)),
      ...(typeof code === 'string' ? { code: storable(code) } : {}),
      ...(typeof stack === 'string' && stack ? { stack: storable(stack.split('\n').slice(0, 12).join('\n')) } : {}),
      ...extra,
    };
  }
  return { name: 'Error', message: storable(typeof err === 'string' ? err : safeJson(err)), ...extra };
}

/** A thrown object that is not an `Error` but has its shape: a string `message`. */
function isErrorLike(v: unknown): boolean {
  try {
    return typeof v === 'object' && v !== null && typeof (v as { message?: unknown }).message === 'string';
  } catch {
    // a getter or proxy that throws
    return false;
  }
}

/** `String(v)`, or `[object Object]` and the like where that throws (an object without a prototype), else a placeholder (a hostile proxy). */
function safeString(v: unknown): string {
  try {
    return String(v);
  } catch {
    try {
      return Object.prototype.toString.call(v);
    } catch {
      return '[a value that cannot be read]';
    }
  }
}

/** `v` as JSON where it can be, else as a string (a BigInt, a cycle, a symbol): for messages. */
export function safeJson(v: unknown): string {
  try {
    return JSON.stringify(v) ?? safeString(v);
  } catch {
    return safeString(v);
  }
}

/** `Name: message` of anything thrown, for a log line. */
export function describeError(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : `thrown ${typeof err === 'string' ? err : safeJson(err)}`;
}
