import { Module } from '@nestjs/common';
import { Cleanup } from './cleanup.workflow';
import { SchedulesController } from './schedules.controller';

@Module({
  controllers: [SchedulesController],
  providers: [Cleanup],
})
export class MaintenanceModule {}
