/**
 * Milliseconds from a clock that never steps (unlike `Date.now()` under NTP or a resumed VM): for
 * how long ago something happened on this node, never for a time of day. Its zero is arbitrary
 * (the process's start), so "never" is `-Infinity`, not 0.
 */
export const monotonicMs = (): number => performance.now();
