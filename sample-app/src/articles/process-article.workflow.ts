import { Inject } from '@nestjs/common';
import { RunContext, Step, Workflow } from 'nestjs-durable';
import { Article } from './article.entity';
import { ARTICLES_OPTIONS, type ArticlesOptions } from './articles.options';
import { CmsService } from './cms.service';

/** Input of `process_article`: the article, and the revision its start saw (a save's start sends it). */
export interface ProcessArticleInput {
  id: number;
  rev?: number;
}

/** The event a save sends to the article's going `process_article` run: that save's start input. */
export const ARTICLE_UPDATED = 'article_updated';

/** What `process_article` ends with (its `catch_up` step's result). */
export interface ProcessArticleResult {
  /** The article's revision that `summary` is of. */
  rev: number;
  summary: string;
  /** The revision of the save the run caught up with; null when none came within the catch-up window. */
  caughtUp: number | null;
}

/**
 * Process each article once; a failed attempt may be tried again (`reuse: 'afterFailure'`).
 * Started by ArticlesController with the key `article:<id>`; a save while it is going is handed to
 * it (`PUT /articles/:id`, `onDuplicate: { sendEvent: 'article_updated' }`) and `catch_up` refreshes.
 */
@Workflow('process_article', { reuse: 'afterFailure' })
export class ProcessArticle {
  constructor(
    private readonly cms: CmsService,
    @Inject(ARTICLES_OPTIONS) private readonly options: ArticlesOptions,
  ) {}

  @Step()
  async fetch(ctx: RunContext<ProcessArticleInput>) {
    const article = await this.cms.get(ctx.input.id);
    ctx.put('body', article.body);
    ctx.put('rev', article.rev);
  }

  @Step({ retry: { attempts: 5 } })
  async summarize(ctx: RunContext<ProcessArticleInput>) {
    const body = ctx.get<string>('body') ?? '';
    // Demo of retries: an article whose body contains "[flaky]" fails its first two attempts.
    if (body.includes('[flaky]') && ctx.attempt < 3) {
      throw new Error(`summarizer unavailable (simulated, attempt ${ctx.attempt})`);
    }
    // Demo of the graceful drain: "[slow]" makes this step take 5 seconds (it stops early
    // if the run is cancelled: ctx.signal aborts).
    if (body.includes('[slow]')) await pause(5_000, ctx.signal);
    const summary = this.cms.summarize(withoutMarkers(body));
    const rev = ctx.get<number>('rev') ?? 0;
    // Recorded with the run: if this step runs again, the update is not repeated.
    await ctx.transaction((manager) => this.cms.saveSummary(manager, ctx.input.id, summary, rev));
    ctx.put('summary', summary);
    return { summary };
  }

  /**
   * The spec's `catch_up` (hence the step name): a save made while the article was being processed
   * arrives here as the event `article_updated`, kept for this wait if it came mid-step, and the
   * article is summarized again at its newer revision. No save within the catch-up window
   * (`catchUpTimeout`, 5 minutes by default): the wait returns its `timeoutValue` (null) and the run
   * ends with what it has.
   */
  @Step()
  async catch_up(ctx: RunContext<ProcessArticleInput>): Promise<ProcessArticleResult> {
    const update = await ctx.waitForEvent<ProcessArticleInput | null>(ARTICLE_UPDATED, {
      timeout: this.options.catchUpTimeout,
      timeoutValue: null,
    });
    if (update === null) return { rev: ctx.get<number>('rev') ?? 0, summary: ctx.get<string>('summary') ?? '', caughtUp: null };
    // the article as it is now (the save's revision, or a later one), summarized again exactly once
    const refreshed = await ctx.transaction(async (manager) => {
      const article = await manager.findOneByOrFail(Article, { id: ctx.input.id });
      const summary = this.cms.summarize(withoutMarkers(article.body));
      await this.cms.saveSummary(manager, article.id, summary, article.rev);
      return { rev: article.rev, summary };
    });
    return { ...refreshed, caughtUp: update.rev ?? refreshed.rev };
  }
}

/** The body without the demo markers `[flaky]` and `[slow]`. */
function withoutMarkers(body: string): string {
  return body.replace(/\[(flaky|slow)\]/g, '');
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(signal.reason);
      },
      { once: true },
    );
  });
}
