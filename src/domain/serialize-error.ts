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

/** Turns anything thrown into a JSON-safe, storable {@link StoredError}. */
export function serializeError(err: unknown, extra: Record<string, unknown> = {}): StoredError {
  if (err instanceof Error) {
    const code = (err as { code?: unknown }).code;
    return {
      name: storable(safeString(err.name)),
      message: storable(safeString(err.message)),
      ...(typeof code === 'string' ? { code: storable(code) } : {}),
      ...(err.stack ? { stack: storable(err.stack.split('\n').slice(0, 12).join('\n')) } : {}),
      ...extra,
    };
  }
  return { name: 'Error', message: storable(typeof err === 'string' ? err : safeJson(err)), ...extra };
}

/** `String(v)`, or `[object Object]` and the like where that throws (an object without a prototype). */
function safeString(v: unknown): string {
  try {
    return String(v);
  } catch {
    return Object.prototype.toString.call(v);
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
