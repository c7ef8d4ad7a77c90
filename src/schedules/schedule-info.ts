import { CronTime } from 'cron';
import type { ScheduleRow } from '../store/schedules.store';
import { nextOf } from './cron';

/** A stored schedule as `listSchedules` returns it. */
export interface ScheduleInfo {
  name: string;
  workflow: string;
  cron: string;
  timezone: string;
  key: string | null;
  input: unknown;
  /** `'decorator'`: from `@Schedule` (re-stored at every startup); `'api'`: from `DurableService.schedule`. */
  source: 'decorator' | 'api';
  /** The next tick after now. */
  nextFireAt: Date | null;
  /** The last tick that fired (on any node). */
  lastTickAt: Date | null;
  /** When it last fired (tick or `triggerSchedule`). */
  lastFireAt: Date | null;
  lastRunId: string | null;
  /** `StartResult.outcome` of the last fire, `'skipped'` (key held, `onDuplicate: 'error'`) or `'failed'`. */
  lastOutcome: string | null;
  /** Fires that started or found a run (skips included). */
  fires: number;
  /** Fires whose start failed for another reason than a held key. */
  failures: number;
  createdAt: Date;
  updatedAt: Date;
}

/**
 * A stored schedule as {@link ScheduleInfo}: its next tick computed from now (the stored one when
 * its cron or time zone no longer parses).
 */
export function scheduleInfoOf(r: ScheduleRow): ScheduleInfo {
  let next: Date | null;
  try {
    next = nextOf(new CronTime(r.cron, r.timezone));
  } catch {
    next = r.next_fire_at;
  }
  return {
    name: r.name,
    workflow: r.workflow,
    cron: r.cron,
    timezone: r.timezone,
    key: r.key,
    input: r.input,
    source: r.source,
    nextFireAt: next,
    lastTickAt: r.last_tick_at,
    lastFireAt: r.last_fire_at,
    lastRunId: r.last_run_id,
    lastOutcome: r.last_outcome,
    fires: r.fires,
    failures: r.failures,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}
