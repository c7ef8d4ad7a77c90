import type { Logger } from '@nestjs/common';
import { CronJob } from 'cron';
import type { ScheduleCopy } from '../store/schedules.store';
import type { CronJobs } from './cron-jobs';

/** A schedule this node ticks. */
export interface LocalJob extends ScheduleCopy {
  job: CronJob;
  /** The tick the job fires next: the identity of a tick across nodes. */
  nextTick: Date;
  registryName: string;
}

/** Called on each tick of a job, with the tick it fires and the one after. */
export type OnTick = (local: LocalJob, tick: Date, next: Date) => void;

/**
 * A node's cron jobs, one per schedule it ticks, each a copy of the stored row's workflow, cron and
 * time zone: mounting a row that differs from the copy in any of them replaces the job.
 */
export class ScheduleJobs {
  private readonly jobs = new Map<string, LocalJob>();
  private found?: CronJobs;
  /** False once {@link hold} was called: jobs are kept but do not tick on the wall clock. */
  private ticking = true;

  constructor(
    /** Where the jobs are registered, looked up when first needed. */
    private readonly lookup: () => CronJobs,
    private readonly onTick: OnTick,
    private readonly logger: Logger,
  ) {}

  private get cronJobs(): CronJobs {
    return (this.found ??= this.lookup());
  }

  /** Stops every job, now and mounted later, from ticking on the wall clock. */
  hold(): void {
    this.ticking = false;
    for (const local of this.jobs.values()) local.job.stop();
  }

  /** Names of the schedules mounted, sorted. */
  names(): string[] {
    return [...this.jobs.keys()].sort();
  }

  /** Ticks `row` (re-creating its job when the copy differs); a cron the library refuses is logged and not ticked. */
  mount(row: ScheduleCopy): void {
    const existing = this.jobs.get(row.name);
    if (existing && existing.workflow === row.workflow && existing.cron === row.cron && existing.timezone === row.timezone) return;
    this.unmount(row.name);
    let job: CronJob;
    try {
      job = new CronJob(row.cron, () => undefined, null, false, row.timezone);
    } catch (err) {
      this.logger.warn(`schedule "${row.name}": cannot tick ${JSON.stringify(row.cron)} (${row.timezone}): ${(err as Error).message}`);
      return;
    }
    const { name, workflow, cron, timezone } = row;
    const local: LocalJob = { name, workflow, cron, timezone, job, nextTick: new Date(0), registryName: `durable:${name}` };
    // `cron` computes the next date before it calls back, so the tick being fired is the one
    // remembered before; a job that wakes late (paused process) fires that stale tick once, which
    // the guard refuses when another node fired it.
    job.addCallback(() => {
      const tick = local.nextTick;
      local.nextTick = job.nextDate().toJSDate();
      this.onTick(local, tick, local.nextTick);
    });
    if (this.cronJobs.doesExist('cron', local.registryName)) this.cronJobs.deleteCronJob(local.registryName);
    this.cronJobs.addCronJob(local.registryName, job);
    if (this.ticking) job.start();
    local.nextTick = job.nextDate().toJSDate();
    this.jobs.set(name, local);
  }

  /** Stops ticking schedule `name` (nothing when it is not mounted). */
  unmount(name: string): void {
    const local = this.jobs.get(name);
    if (!local) return;
    this.jobs.delete(name);
    local.job.stop();
    if (this.cronJobs.doesExist('cron', local.registryName)) this.cronJobs.deleteCronJob(local.registryName);
  }
}
