import { Logger } from '@nestjs/common';
import { OnFlowCancelled, RunContext, RunInfo, Step, Workflow } from 'nestjs-durable';
import { CmsService } from '../articles/cms.service';

/** What each per-article node of the nightly ETL records. */
export interface ArticleStats {
  id: number;
  title: string;
  words: number;
  summarized: boolean;
}

/** First node of the nightly ETL: the moment the snapshot was taken (recorded for the report). */
@Workflow('etl_snapshot')
export class EtlSnapshot {
  @Step()
  async take(ctx: RunContext<{ articleIds: number[] }>) {
    return { takenAt: new Date().toISOString(), articles: ctx.input.articleIds.length };
  }
}

/** Fan-out: one node per article, in parallel across the workers. */
@Workflow('etl_article_stats', { retry: { attempts: 3, initialDelay: '200ms' } })
export class EtlArticleStats implements OnFlowCancelled {
  private readonly logger = new Logger('NightlyEtl');

  constructor(private readonly cms: CmsService) {}

  @Step()
  async measure(ctx: RunContext<{ id: number }>): Promise<ArticleStats> {
    const article = await this.cms.get(ctx.input.id);
    return {
      id: article.id,
      title: article.title,
      words: article.body.split(/\s+/).filter(Boolean).length,
      summarized: article.summary !== null && article.summary !== undefined,
    };
  }

  afterCancelled(reason: 'cancelled' | 'failed' | 'deleted', run: RunInfo) {
    this.logger.warn(`article node ${run.name} of flow ${run.flowId} was cancelled: a dependency was ${reason}`);
  }
}

/** Fan-in: runs once every article node finished, and reads their recorded results. */
@Workflow('etl_report')
export class EtlReport implements OnFlowCancelled {
  private readonly logger = new Logger('NightlyEtl');

  @Step()
  async report(ctx: RunContext) {
    const flow = ctx.flow!;
    const snapshot = await flow.getRecorded<{ takenAt: string }>('snapshot');
    const stats = Object.values(await flow.allRecorded<ArticleStats>({ onlyDeps: true }));
    const words = stats.reduce((n, s) => n + s.words, 0);
    const report = {
      flowId: flow.flowId,
      snapshotAt: snapshot?.takenAt ?? null,
      articles: stats.length,
      words,
      summarized: stats.filter((s) => s.summarized).length,
      longest: stats.sort((a, b) => b.words - a.words)[0]?.title ?? null,
    };
    this.logger.log(`nightly ETL ${flow.flowId}: ${report.articles} article(s), ${words} word(s)`);
    return report;
  }

  afterCancelled(reason: 'cancelled' | 'failed' | 'deleted', run: RunInfo) {
    this.logger.warn(`report of flow ${run.flowId} was cancelled: a dependency was ${reason}`);
  }
}
