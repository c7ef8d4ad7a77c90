import { DynamicModule, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { Article } from './article.entity';
import { ArticlesController } from './articles.controller';
import { ARTICLES_OPTIONS, DEFAULT_CATCH_UP_TIMEOUT, type ArticlesOptions } from './articles.options';
import { CmsService } from './cms.service';
import { IndexArticle } from './index-article.workflow';
import { ProcessArticle } from './process-article.workflow';
import { PublishArticle } from './publish-article.workflow';

/** Articles: their entity and controller, the CMS stand-in and the article workflows. */
@Module({
  imports: [TypeOrmModule.forFeature([Article])],
  controllers: [ArticlesController],
  // The workflow is an ordinary provider; DurableModule discovers it.
  providers: [CmsService, ProcessArticle, PublishArticle, IndexArticle],
})
export class ArticlesModule {
  /** The articles feature; `catchUpTimeout` defaults to `ARTICLE_CATCH_UP_TIMEOUT`, else 5 minutes. */
  static register(options: Partial<ArticlesOptions> = {}): DynamicModule {
    const resolved: ArticlesOptions = {
      catchUpTimeout: options.catchUpTimeout ?? process.env.ARTICLE_CATCH_UP_TIMEOUT ?? DEFAULT_CATCH_UP_TIMEOUT,
    };
    return { module: ArticlesModule, providers: [{ provide: ARTICLES_OPTIONS, useValue: resolved }] };
  }
}
