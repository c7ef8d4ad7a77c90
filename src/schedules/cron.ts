import { CronTime } from 'cron';
import { assertValid, problem } from '../domain/validation';
import type { ValidationError } from 'class-validator';

/**
 * Parses `cron` in `timezone`; throws `DurableValidationError` naming what is wrong (also for a
 * cron that matches no date). `what` says where it comes from (`@Schedule on X`, `schedule`).
 */
export function parseCron(what: string, cron: unknown, timezone: unknown): CronTime {
  const problems: (ValidationError | undefined)[] = [];
  if (timezone !== undefined && (typeof timezone !== 'string' || !isTimeZone(timezone))) {
    problems.push(problem('timezone', timezone, 'isTimeZone', `timezone must be an IANA time zone such as 'Europe/Paris', got ${JSON.stringify(timezone)}`));
  }
  let time: CronTime | undefined;
  if (typeof cron !== 'string' || cron.trim() === '') {
    problems.push(problem('cron', cron, 'isCron', `cron must be a cron expression such as '*/5 * * * *', got ${JSON.stringify(cron)}`));
  } else if (!problems.length) {
    try {
      time = new CronTime(cron, (timezone as string | undefined) ?? 'UTC');
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
