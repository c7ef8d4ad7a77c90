import { randomFillSync } from 'node:crypto';

const pool = Buffer.alloc(16 * 256);
let offset = pool.length;
const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

/** A time-ordered random UUIDv7 (RFC 9562): ids sort by creation time, which keeps indexes compact. */
export function uuidv7(): string {
  if (offset === pool.length) {
    randomFillSync(pool);
    offset = 0;
  }
  const b = pool.subarray(offset, offset + 16);
  offset += 16;
  let ts = Date.now();
  for (let i = 5; i >= 0; i--) {
    b[i] = ts % 256;
    ts = Math.floor(ts / 256);
  }
  b[6] = (b[6] & 0x0f) | 0x70;
  b[8] = (b[8] & 0x3f) | 0x80;
  let s = '';
  for (let i = 0; i < 16; i++) {
    s += HEX[b[i]];
    if (i === 3 || i === 5 || i === 7 || i === 9) s += '-';
  }
  return s;
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** True for a syntactically valid UUID (anything else cannot name a run). */
export const isUuid = (s: unknown): s is string => typeof s === 'string' && UUID_RE.test(s);
