/**
 * The times PostgreSQL can hold, in milliseconds since 1970 as a `Date` counts them: a time the
 * module stores or filters by is checked against them, so one out of them is refused instead of
 * failing in the database.
 */

/** The earliest time PostgreSQL reads from an ISO string (`toISOString()`): the start of the year 1. */
export const EARLIEST_ISO_TIME_MS = Date.parse('0001-01-01T00:00:00.000Z');

/** The earliest time a Postgres `timestamptz` holds, rounded up to a year (4713 BC); every later `Date` fits. */
export const EARLIEST_TIMESTAMPTZ_MS = Date.UTC(-4712, 0, 1);

/** The latest time PostgreSQL reads from an ISO string: the end of the year 9999. */
export const LATEST_TIME_MS = Date.parse('9999-12-31T23:59:59.999Z');
