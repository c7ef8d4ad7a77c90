import { optionNames } from '../domain/validation';
import { SCHEDULES_METADATA } from './metadata.constants';

/** Options of `@Schedule` and `DurableService.schedule`. */
export interface ScheduleOptions {
  /** Unique name of the schedule (default: the workflow's name). */
  name?: string;
  /** Every fire starts with this key, so a fire while the last run holds it follows `onDuplicate`. */
  key?: string;
  /** Input of every fired run. */
  input?: unknown;
  /** IANA time zone the cron is read in (default `'UTC'`, so that every node agrees on the ticks). */
  timezone?: string;
}

/** The option names of `@Schedule` and `schedule` (anything else is refused as misspelt). */
export const SCHEDULE_OPTION_NAMES = optionNames<ScheduleOptions>({ name: true, key: true, input: true, timezone: true });

/** One `@Schedule` as recorded on its class. */
export interface ScheduleMetadata {
  cron: string;
  options: ScheduleOptions;
}

/**
 * Fires the decorated `@Workflow` on `cron` (5 fields, or 6 with seconds first), once per tick
 * across all nodes. Metadata only: the module stores it at startup (invalid cron or time zone →
 * `DurableValidationError` then). Several `@Schedule`s on one class need distinct names.
 */
export function Schedule(cron: string, options: ScheduleOptions = {}): ClassDecorator {
  return (target) => {
    const list: ScheduleMetadata[] = Reflect.getOwnMetadata(SCHEDULES_METADATA, target) ?? [];
    Reflect.defineMetadata(SCHEDULES_METADATA, [...list, { cron, options }], target);
  };
}
