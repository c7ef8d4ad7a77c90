import { Injectable, NotFoundException } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { EntityManager, Repository } from 'typeorm';
import { Article, type ArticleStatus } from './article.entity';

/** The "CMS" the workflow talks to: reads articles and writes their summaries. */
@Injectable()
export class CmsService {
  constructor(@InjectRepository(Article) private readonly articles: Repository<Article>) {}

  async get(id: number): Promise<Article> {
    const article = await this.articles.findOneBy({ id });
    if (!article) throw new NotFoundException(`article ${id} not found`);
    return article;
  }

  /** A stand-in for a call to a summarising service: the first sentence, at most 30 words. */
  summarize(body: string): string {
    const firstSentence = body.trim().split(/(?<=[.!?])\s/)[0] ?? '';
    const words = firstSentence.split(/\s+/).filter(Boolean);
    return words.length > 30 ? `${words.slice(0, 30).join(' ')}…` : words.join(' ');
  }

  /** Run inside `ctx.transaction`, so the write happens exactly once per run; `rev`: the revision summarized. */
  async saveSummary(manager: EntityManager, id: number, summary: string, rev: number): Promise<void> {
    await manager.update(Article, { id }, { summary, status: 'summarized', processedRev: rev });
  }

  /** Run inside `ctx.transaction` by `publish_article`: the editor's decision is applied once. */
  async setStatus(manager: EntityManager, id: number, status: ArticleStatus): Promise<void> {
    await manager.update(Article, { id }, { status });
  }
}
