'use strict';
// Kinds of call measured in turns: within a round each kind takes its turn chunk by chunk, so that
// a drift of the machine's speed during the run weighs on all of them alike (keys.js, local-starts.js).

/** Runs calls `from` … `to - 1` of `fn(i)` from `callers` concurrent loops; returns the seconds taken. */
async function seconds(from, to, callers, fn) {
  let next = from;
  const t0 = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: callers }, async () => {
      for (let i = next++; i < to; i = next++) await fn(i);
    }),
  );
  return Number(process.hrtime.bigint() - t0) / 1e9;
}

/** One round: `n` calls of each of `kinds` (name → fn(i)), taking turns in `chunks` chunks; returns calls per second of each. */
async function round(callers, kinds, n, chunks) {
  const spent = Object.fromEntries(Object.keys(kinds).map((k) => [k, 0]));
  for (let c = 0; c < chunks; c++) {
    const [from, to] = [Math.floor((c * n) / chunks), Math.floor(((c + 1) * n) / chunks)];
    for (const [k, fn] of Object.entries(kinds)) spent[k] += await seconds(from, to, callers, fn);
  }
  return Object.fromEntries(Object.entries(spent).map(([k, s]) => [k, n / s]));
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
/** The median of rates with their min–max, rounded. */
const fmt = (xs) =>
  `${Math.round(median(xs)).toLocaleString('en-US')} (${Math.round(Math.min(...xs)).toLocaleString('en-US')}–${Math.round(Math.max(...xs)).toLocaleString('en-US')})`;

module.exports = { seconds, round, median, fmt };
