import { Controller, Get, HttpCode, Param, Post } from '@nestjs/common';
import { DurableService } from 'nestjs-durable';

@Controller('schedules')
export class SchedulesController {
  constructor(private readonly durable: DurableService) {}

  /** `GET /schedules`: every stored schedule with its next and last fire. */
  @Get()
  list() {
    return this.durable.listSchedules();
  }

  /** `POST /schedules/cleanup/trigger`: fire now (with the schedule's key: a running cleanup is reused). */
  @Post(':name/trigger')
  @HttpCode(202)
  trigger(@Param('name') name: string) {
    return this.durable.triggerSchedule(name);
  }
}
