import { BadRequestException, Controller, Get, NotFoundException, Param, Query } from '@nestjs/common';
import { DurableService } from 'nestjs-durable';

type ListRunsFilter = Parameters<DurableService['listRuns']>[0];

@Controller('runs')
export class RunsController {
  constructor(private readonly durable: DurableService) {}

  /** `GET /runs?workflow=process_article&key=article:1&status=completed&waitingFor=input&limit=20&cursor=…` */
  @Get()
  async list(
    @Query('workflow') workflow?: string,
    @Query('key') key?: string,
    @Query('status') status?: string,
    @Query('limit') limit?: string,
    @Query('cursor') cursor?: string,
    @Query('waitingFor') waitingFor?: string,
  ) {
    const filter: Record<string, unknown> = {};
    if (workflow) filter.workflow = workflow;
    if (key) filter.key = key;
    if (status) filter.status = status;
    if (cursor) filter.cursor = cursor;
    if (waitingFor) {
      if (!['sleep', 'event', 'input', 'children'].includes(waitingFor)) {
        throw new BadRequestException('waitingFor must be one of sleep, event, input, children');
      }
      filter.waitingFor = waitingFor;
    }
    if (limit !== undefined) {
      const n = Number(limit);
      if (!Number.isInteger(n) || n < 1 || n > 1000) {
        throw new BadRequestException('limit must be an integer from 1 to 1000');
      }
      filter.limit = n;
    }
    return this.durable.listRuns(filter as ListRunsFilter);
  }

  @Get(':id')
  async get(@Param('id') id: string) {
    const run = await this.durable.getRun(id);
    if (!run) throw new NotFoundException(`run ${id} not found`);
    return run;
  }
}
