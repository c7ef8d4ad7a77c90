/** One changed JSON path: the holder's value and the dropped one (`undefined`: absent on that side). */
export interface JsonChange {
  /** `$`, `$.a.b`, `$.list[2]`. */
  path: string;
  before: unknown;
  after: unknown;
}

/** Most changes listed for one pair of values. */
const MAX_CHANGES = 200;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The JSON paths at which `after` differs from `before`, deepest first where both sides are objects or arrays. */
export function jsonDiff(before: unknown, after: unknown): JsonChange[] {
  const out: JsonChange[] = [];
  walk('$', before, after, out);
  return out.slice(0, MAX_CHANGES);
}

function walk(path: string, a: unknown, b: unknown, out: JsonChange[]): void {
  if (out.length >= MAX_CHANGES) return;
  if (Array.isArray(a) && Array.isArray(b)) {
    for (let i = 0; i < Math.max(a.length, b.length); i++) walk(`${path}[${i}]`, a[i], b[i], out);
    return;
  }
  if (isObject(a) && isObject(b)) {
    const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
    for (const k of keys) walk(/^[A-Za-z_$][\w$]*$/.test(k) ? `${path}.${k}` : `${path}[${JSON.stringify(k)}]`, a[k], b[k], out);
    return;
  }
  if (JSON.stringify(a) !== JSON.stringify(b)) out.push({ path, before: a, after: b });
}
