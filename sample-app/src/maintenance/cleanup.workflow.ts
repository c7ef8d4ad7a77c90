import { DurableService, RunContext, Schedule, Step, Workflow } from 'nestjs-durable';

/**
 * Every 5 minutes, on one node of the cluster: prune finished runs and activity past the
 * retention options. The key `cleanup` means a fire while the previous cleanup still runs starts
 * nothing (the workflow's default `onDuplicate: 'useExisting'`; the activity log records a
 * `key_duplicate`), so two cleanups never overlap.
 */
@Schedule('*/5 * * * *', { key: 'cleanup' })
@Workflow('cleanup')
export class Cleanup {
  constructor(private readonly durable: DurableService) {}

  @Step()
  async prune(ctx: RunContext) {
    const pruned = await this.durable.prune();
    return { ...pruned, at: new Date().toISOString(), attempt: ctx.attempt };
  }
}
