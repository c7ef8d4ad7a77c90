/** A failure as stored in `runs.error`. */
export interface StoredError {
  name: string;
  message: string;
  code?: string;
  stack?: string;
  [extra: string]: unknown;
}

/** Turns anything thrown into a JSON-safe {@link StoredError}. */
export function serializeError(err: unknown, extra: Record<string, unknown> = {}): StoredError {
  if (err instanceof Error) {
    const code = (err as { code?: unknown }).code;
    return {
      name: err.name,
      message: err.message,
      ...(typeof code === 'string' ? { code } : {}),
      ...(err.stack ? { stack: err.stack.split('\n').slice(0, 12).join('\n') } : {}),
      ...extra,
    };
  }
  return { name: 'Error', message: typeof err === 'string' ? err : safeJson(err), ...extra };
}

function safeJson(v: unknown): string {
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return String(v);
  }
}
