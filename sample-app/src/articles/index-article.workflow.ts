import { RunContext, seconds, minutes, Step, Workflow } from 'nestjs-durable';
import { CmsService } from './cms.service';

/**
 * Search indexing, debounced per article (key `article:<id>`): a burst of edits becomes one run
 * with the last edit, due 5 s after the last one, at most 1 minute after the first.
 * Started by `PUT /articles/:id`.
 */
@Workflow('index_article', { debounce: { period: seconds(5), timeout: minutes(1) } })
export class IndexArticle {
  constructor(private readonly cms: CmsService) {}

  @Step()
  async index(ctx: RunContext<{ id: number; rev: number }>) {
    const article = await this.cms.get(ctx.input.id);
    return { id: article.id, rev: ctx.input.rev, words: article.body.split(/\s+/).filter(Boolean).length };
  }
}
