import { BadRequestException, Body, Controller, Get, NotFoundException, Param, ParseIntPipe, Post, Put } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DurableService, KeyTakenError, type StartResult } from 'nestjs-durable';
import { DataSource, EntityManager } from 'typeorm';
import { Article } from './article.entity';
import { IndexArticle } from './index-article.workflow';
import { ARTICLE_UPDATED, ProcessArticle } from './process-article.workflow';
import { PublishArticle, type EditorDecision } from './publish-article.workflow';

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
      const { runId } = await this.durable.start(ProcessArticle, { id: article.id }, { key: `article:${article.id}`, manager });
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

  /**
   * Starts the approval flow (`publish_article`, key `publish:<id>`): the run waits for an editor's
   * decision, listed by `GET /runs?waitingFor=input` meanwhile.
   */
  @Post(':id/publish')
  async publish(@Param('id', ParseIntPipe) id: number) {
    await this.find(id);
    return this.durable.start(PublishArticle, { id }, { key: `publish:${id}` });
  }

  /**
   * The editor's decision `{ approved: boolean, by?: string, note?: string }`: provided to the
   * article's going `publish_article` run (it resumes; a decision sent before the run reaches its
   * wait is kept for it). 404 when no approval flow is going for the article.
   */
  @Post(':id/approve')
  async approve(@Param('id', ParseIntPipe) id: number, @Body() body: Partial<EditorDecision>) {
    if (body?.approved !== undefined && typeof body.approved !== 'boolean') {
      throw new BadRequestException('approved must be a boolean');
    }
    const decision: EditorDecision = {
      approved: body?.approved ?? true,
      by: typeof body?.by === 'string' ? body.by : null,
      ...(typeof body?.note === 'string' ? { note: body.note } : {}),
    };
    const [run] = await this.durable.listRuns({
      workflow: PublishArticle,
      key: `publish:${id}`,
      status: ['pending', 'running', 'waiting'],
      limit: 1,
    });
    if (!run) throw new NotFoundException(`no approval is going for article ${id} (POST /articles/${id}/publish first)`);
    await this.durable.provideInput(run.id, 'editor_approval', decision);
    return { runId: run.id, decision };
  }

  /**
   * Edits the article and, in the same transaction, (re)starts its debounced `index_article` run —
   * five saves within a few seconds become one indexing run with the last revision
   * (`outcome: 'debounced'` for the starts that joined it) — and hands the new revision to the
   * article's `process_article` run if it is still going (`process`, see {@link catchUp}).
   */
  @Put(':id')
  async update(@Param('id', ParseIntPipe) id: number, @Body() input: CreateArticleBody) {
    const { title, body } = validate(input);
    return this.dataSource.transaction(async (manager) => {
      const article = await manager.findOneBy(Article, { id });
      if (!article) throw new NotFoundException(`article ${id} not found`);
      const rev = article.rev + 1;
      await manager.update(Article, { id }, { title, body, rev });
      const index = await this.durable.start(IndexArticle, { id, rev }, { key: `article:${id}`, manager });
      const process = await this.catchUp(manager, id, rev);
      return { id, rev, index, process };
    });
  }

  /**
   * Signal-With-Start: starts `process_article` with the saved revision, or — while the article's
   * run is going — sends it to that run as the event `article_updated` (`outcome: 'sendEvent'`, the
   * run's id), kept until its `catch_up` step waits for it. Null when the article's processing has
   * completed: `reuse: 'afterFailure'` keeps the key and nothing is started.
   */
  private async catchUp(manager: EntityManager, id: number, rev: number): Promise<StartResult | null> {
    try {
      return await this.durable.start(ProcessArticle, { id, rev }, { key: `article:${id}`, onDuplicate: { sendEvent: ARTICLE_UPDATED }, manager });
    } catch (err) {
      // a duplicate rejects without aborting the transaction: the edit is still saved
      if (err instanceof KeyTakenError) return null;
      throw err;
    }
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
