import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { Article } from '../articles/article.entity';
import { CmsService } from '../articles/cms.service';
import { NewslettersController } from './newsletters.controller';
import { SendNewsletter } from './send-newsletter.workflow';

/** Newsletters: one `@IdempotentStart` route and the workflow it starts. */
@Module({
  imports: [TypeOrmModule.forFeature([Article])],
  controllers: [NewslettersController],
  providers: [CmsService, SendNewsletter],
})
export class NewslettersModule {}
