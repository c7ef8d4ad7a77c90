import { DurableError } from './durable.error';

/** No schedule with that name exists (`triggerSchedule`). */
export class ScheduleNotFoundError extends DurableError {
  readonly code = 'schedule_not_found' as const;

  constructor(readonly scheduleName: string) {
    super(`schedule "${scheduleName}" not found`);
  }
}
