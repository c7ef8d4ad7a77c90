import {
  BadRequestException,
  Body,
  Controller,
  Get,
  NotFoundException,
  Param,
  ParseIntPipe,
  Post,
} from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DurableService } from 'nestjs-durable';
import { DataSource } from 'typeorm';
import { Article } from './article.entity';
import { ProcessArticle } from './process-article.workflow';

interface CreateArticleBody {
  title?: unknown;
  body?: unknown;
}

@Controller('articles')
export class ArticlesController {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly durable: DurableService,
  ) {}

  /**
   * Saves the article and starts `process_article` in one transaction: the run exists
   * only if the article was saved, and a rollback removes both.
   */
  @Post()
  async create(@Body() input: CreateArticleBody) {
    const { title, body } = validate(input);
    return this.dataSource.transaction(async (manager) => {
      const article = await manager.save(manager.create(Article, { title, body, status: 'submitted' }));
      const { runId } = await this.durable.start(
        ProcessArticle,
        { id: article.id },
        { key: `article:${article.id}`, manager },
      );
      return { article, runId };
    });
  }

  /**
   * Starts `process_article` for an existing article again, with the same key: while the
   * article's run is going or has completed, this returns that run (`outcome: 'useExisting'`);
   * after a failure it starts a new one.
   */
  @Post(':id/process')
  async process(@Param('id', ParseIntPipe) id: number) {
    await this.find(id);
    return this.durable.start(ProcessArticle, { id }, { key: `article:${id}` });
  }

  @Get(':id')
  async get(@Param('id', ParseIntPipe) id: number) {
    return this.find(id);
  }

  @Get()
  async list() {
    return this.dataSource.getRepository(Article).find({ order: { id: 'DESC' }, take: 50 });
  }

  private async find(id: number): Promise<Article> {
    const article = await this.dataSource.getRepository(Article).findOneBy({ id });
    if (!article) throw new NotFoundException(`article ${id} not found`);
    return article;
  }
}

function validate(input: CreateArticleBody): { title: string; body: string } {
  const { title, body } = input ?? {};
  if (typeof title !== 'string' || title.trim() === '' || title.length > 200) {
    throw new BadRequestException('title must be a non-empty string of at most 200 characters');
  }
  if (typeof body !== 'string' || body.trim() === '') {
    throw new BadRequestException('body must be a non-empty string');
  }
  return { title, body };
}
