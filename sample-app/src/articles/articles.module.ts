import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { Article } from './article.entity';
import { ArticlesController } from './articles.controller';
import { CmsService } from './cms.service';
import { IndexArticle } from './index-article.workflow';
import { ProcessArticle } from './process-article.workflow';
import { PublishArticle } from './publish-article.workflow';

@Module({
  imports: [TypeOrmModule.forFeature([Article])],
  controllers: [ArticlesController],
  // The workflow is an ordinary provider; DurableModule discovers it.
  providers: [CmsService, ProcessArticle, PublishArticle, IndexArticle],
})
export class ArticlesModule {}
