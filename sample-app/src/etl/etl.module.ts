import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { Article } from '../articles/article.entity';
import { CmsService } from '../articles/cms.service';
import { EtlController } from './etl.controller';
import { EtlArticleStats, EtlReport, EtlSnapshot } from './etl.workflows';

/** The nightly-ETL DAG flow and its endpoints (`/flows/...`). */
@Module({
  imports: [TypeOrmModule.forFeature([Article])],
  controllers: [EtlController],
  providers: [CmsService, EtlSnapshot, EtlArticleStats, EtlReport],
})
export class EtlModule {}
