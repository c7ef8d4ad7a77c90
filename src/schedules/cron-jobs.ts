import type { ModuleRef } from '@nestjs/core';
import type { CronJob } from 'cron';

/** Where a node's schedule jobs are kept: Nest's `SchedulerRegistry`, or a registry of its own. */
export interface CronJobs {
  doesExist(type: 'cron', name: string): boolean;
  addCronJob(name: string, job: CronJob): void;
  deleteCronJob(name: string): void;
}

/** A registry of the module's own, when the app has no `ScheduleModule`. */
class LocalCronJobs implements CronJobs {
  private readonly jobs = new Map<string, CronJob>();
  doesExist(_type: 'cron', name: string): boolean {
    return this.jobs.has(name);
  }
  addCronJob(name: string, job: CronJob): void {
    this.jobs.set(name, job);
  }
  deleteCronJob(name: string): void {
    this.jobs.delete(name);
  }
}

/**
 * The app's `SchedulerRegistry` when `@nestjs/schedule` is installed and its `ScheduleModule`
 * imported (the schedules' jobs then show up there), else a registry of the module's own.
 * `@nestjs/schedule` is an optional peer: it is looked up, never required.
 */
export function cronJobsOf(moduleRef: ModuleRef): CronJobs {
  let registryType: Function | undefined;
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- an optional peer, looked up at run time
    registryType = (require('@nestjs/schedule') as { SchedulerRegistry: Function }).SchedulerRegistry;
  } catch {
    return new LocalCronJobs();
  }
  try {
    return moduleRef.get<CronJobs>(registryType, { strict: false });
  } catch {
    return new LocalCronJobs();
  }
}
