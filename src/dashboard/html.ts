/** HTML that is already safe (built by {@link markup} or {@link raw}): inserted as it is. */
export class SafeHtml {
  constructor(readonly value: string) {}

  toString(): string {
    return this.value;
  }
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;', '`': '&#96;' };

/** Escapes text for an HTML element or a quoted attribute. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"'`]/g, (c) => ESCAPES[c]);
}

/** Marks trusted markup (the dashboard's own) as safe. Never for a value read from a run. */
export function raw(markup: string): SafeHtml {
  return new SafeHtml(markup);
}

/** A value as HTML: safe markup as it is, arrays joined, null/undefined/false empty, anything else escaped. */
function part(value: unknown): string {
  if (value instanceof SafeHtml) return value.value;
  if (Array.isArray(value)) return value.map(part).join('');
  if (value === null || value === undefined || value === false) return '';
  return escapeHtml(String(value));
}

/** Tagged template: every interpolated value is escaped unless it is {@link SafeHtml}. */
export function markup(strings: TemplateStringsArray, ...values: unknown[]): SafeHtml {
  let out = strings[0];
  for (let i = 0; i < values.length; i++) out += part(values[i]) + strings[i + 1];
  return new SafeHtml(out);
}

/** Most characters of one JSON value a page shows in full view (a run's input, context, result, error). */
export const VALUE_CHARS = 65_536;

/** Most characters of one JSON value a page shows in a table cell (a step's error, an activity's details). */
export const CELL_CHARS = 2_048;

/**
 * `text` cut after `max` characters (never inside a surrogate pair), ending with how many bytes
 * (UTF-8) were left out: a page never carries a value whole however big it is stored.
 */
export function clip(text: string, max: number): string {
  if (text.length <= max) return text;
  const cut = /[\uD800-\uDBFF]/.test(text[max - 1]) ? max - 1 : max;
  return `${text.slice(0, cut)}… ${Buffer.byteLength(text.slice(cut), 'utf8')} more bytes`;
}

/** A JSON value as indented text, for a `<pre>`, cut after `max` characters (see {@link clip}). */
export function json(value: unknown, max = VALUE_CHARS): string {
  return value === undefined ? '' : clip(JSON.stringify(value, null, 2), max);
}

/** A date as an ISO string (UTC), or a dash. */
export function when(date: Date | string | null | undefined): string {
  if (!date) return '—';
  const d = date instanceof Date ? date : new Date(date);
  return d
    .toISOString()
    .replace('T', ' ')
    .replace(/\.\d+Z$/, 'Z');
}
