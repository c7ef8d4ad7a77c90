import { CronTime } from 'cron';
import { assertValid, problem } from '../domain/validation';
import { safeJson } from '../domain/serialize-error';
import type { ValidationError } from 'class-validator';

/**
 * Parses `cron` in `timezone`; throws `DurableValidationError` naming what is wrong (also for a
 * cron that matches no date). `what` says where it comes from (`@Schedule on X`, `schedule`).
 */
export function parseCron(what: string, cron: unknown, timezone: unknown): CronTime {
  const problems: (ValidationError | undefined)[] = [];
  if (timezone !== undefined && timezone !== null && (typeof timezone !== 'string' || !isTimeZone(timezone))) {
    problems.push(problem('timezone', timezone, 'isTimeZone', `timezone must be an IANA time zone such as 'Europe/Paris', got ${safeJson(timezone)}`));
  }
  let time: CronTime | undefined;
  if (typeof cron !== 'string' || cron.trim() === '') {
    problems.push(problem('cron', cron, 'isCron', `cron must be a cron expression such as '*/5 * * * *', got ${safeJson(cron)}`));
  } else if (!problems.length) {
    try {
      time = new CronTime(cron, (timezone as string | null | undefined) ?? 'UTC');
    } catch (err) {
      problems.push(problem('cron', cron, 'isCron', `cron ${JSON.stringify(cron)} is not a valid cron expression: ${(err as Error).message}`));
    }
    if (time && !nextOf(time)) {
      problems.push(
        problem(
          'cron',
          cron,
          'firesAtAll',
          `cron ${JSON.stringify(cron)} matches no date, so it would never fire (such as day 31 of February): check its day and month fields`,
        ),
      );
    }
  }
  assertValid(what, problems);
  return time!;
}

/**
 * A valid time zone as stored and shown: the IANA name in its own case when the name differs from
 * one only in case (`'europe/paris'` is `'Europe/Paris'`, `'utc'` is `'UTC'`), else as given (a link
 * such as `'Asia/Kolkata'` is not renamed); none (undefined or null) is `'UTC'`.
 */
export function canonicalTimeZone(tz: string | null | undefined): string {
  if (tz == null) return 'UTC';
  const lower = tz.toLowerCase();
  return ['UTC', ...Intl.supportedValuesOf('timeZone')].find((z) => z.toLowerCase() === lower) ?? tz;
}

function isTimeZone(tz: string): boolean {
  if (tz.trim() === '') return false;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

/** The next tick of `time` after now, or null when there is none. */
export function nextOf(time: CronTime): Date | null {
  try {
    return time.sendAt().toJSDate();
  } catch {
    return null;
  }
}

/** The first tick of `cron` (in `timezone`) after `from`, or null when there is none. */
export function nextTickAfter(cron: string, timezone: string, from: Date): Date | null {
  try {
    return new CronTime(cron, timezone).getNextDateFrom(from, timezone).toJSDate();
  } catch {
    return null;
  }
}

/** The local date and time at `at` in `timeZone`, to the second (formats kept per zone). */
function wallClock(at: number, timeZone: string): { text: string; hour: number; minute: number; second: number } {
  let format = WALL_CLOCKS.get(timeZone);
  if (!format) {
    const fields = { year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit' } as const;
    WALL_CLOCKS.set(timeZone, (format = new Intl.DateTimeFormat('en-CA', { timeZone, hourCycle: 'h23', ...fields })));
  }
  const parts = format.formatToParts(at);
  const part = (type: Intl.DateTimeFormatPartTypes) => Number(parts.find((p) => p.type === type)!.value);
  return { text: parts.map((p) => p.value).join(''), hour: part('hour'), minute: part('minute'), second: part('second') };
}
const WALL_CLOCKS = new Map<string, Intl.DateTimeFormat>();

/** How far a clock change moves a clock back: 2 h (Antarctica/Troll), 1 h (most zones), 30 min (Lord Howe). */
const CLOCK_SHIFTS_MS = [7_200_000, 3_600_000, 1_800_000];

/** Whether `value` is in a field of a parsed cron (`{ 3: true, … }`). */
const inField = (field: Record<number, boolean>, value: number): boolean => value in field;

/**
 * The tick of `cron` (in `timezone`) at `at` as every node names it, or null when `at` is not one
 * of its ticks. When a clock goes back, the local times of the hour it repeats happen twice: a cron
 * of some hours ticks once there, at the first of the two instants (nodes that computed the tick
 * before and after the change would otherwise name it by two instants and both fire it); a cron of
 * every hour ticks at both. In that hour the cron library can also name an instant whose local time
 * is of another hour than the cron's: that is no tick. After a clock went forward, the first local
 * time that exists stands for the skipped ones (02:30 → 03:00), as the library names it.
 */
export function tickAt(cron: string, timezone: string, at: Date): Date | null {
  const time = new CronTime(cron, timezone) as unknown as Record<'hour' | 'minute' | 'second', Record<number, boolean>>;
  const ms = at.getTime();
  const wall = wallClock(ms, timezone);
  const sameWall = (shift: number) => wallClock(ms + shift, timezone).text === wall.text;
  const earlier = CLOCK_SHIFTS_MS.find((shift) => sameWall(-shift));
  const repeated = earlier !== undefined || CLOCK_SHIFTS_MS.some((shift) => sameWall(shift));
  if (!inField(time.hour, wall.hour) || !inField(time.minute, wall.minute) || !inField(time.second, wall.second)) return repeated ? null : at;
  if (earlier === undefined || Object.keys(time.hour).length === 24) return at;
  return new Date(ms - earlier);
}
