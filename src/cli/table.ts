/**
 * A cell as people read it: JSON for objects, ISO for times, '-' for nothing; a control character
 * (a line break in a key or an error message) escaped as JSON writes it, so a row stays one line.
 */
export function cell(value: unknown): string {
  if (value === null || value === undefined || value === '') return '-';
  if (value instanceof Date) return value.toISOString();
  if (typeof value === 'object') return JSON.stringify(value);
  // eslint-disable-next-line no-control-regex
  return String(value).replace(/[\u0000-\u001f\u007f]/g, (c) => JSON.stringify(c).slice(1, -1));
}

/** Rows as a table with a header and columns padded to their widest cell; `empty` when none. */
export function table(columns: string[], rows: unknown[][], empty: string): string {
  if (rows.length === 0) return empty;
  const cells = [columns, ...rows.map((r) => r.map(cell))];
  const widths = columns.map((_, i) => Math.max(...cells.map((r) => r[i].length)));
  return cells.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]))).join('  ')).join('\n');
}

/** `label: value` lines with the labels aligned. */
export function fields(pairs: [string, unknown][]): string {
  const width = Math.max(...pairs.map(([label]) => label.length));
  return pairs.map(([label, value]) => `${`${label}:`.padEnd(width + 1)} ${cell(value)}`).join('\n');
}
