import { RunContext, Step, Workflow } from 'nestjs-durable';
import { CmsService } from './cms.service';

export interface ProcessArticleInput {
  id: number;
}

/**
 * Process each article once; a failed attempt may be tried again (`reuse: 'afterFailure'`).
 * Started by ArticlesController with the key `article:<id>`.
 */
@Workflow('process_article', { reuse: 'afterFailure' })
export class ProcessArticle {
  constructor(private readonly cms: CmsService) {}

  @Step()
  async fetch(ctx: RunContext<ProcessArticleInput>) {
    ctx.put('body', (await this.cms.get(ctx.input.id)).body);
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
    const summary = this.cms.summarize(body.replace(/\[(flaky|slow)\]/g, ''));
    // Recorded with the run: if this step runs again, the update is not repeated.
    await ctx.transaction((manager) => this.cms.saveSummary(manager, ctx.input.id, summary));
    return { summary };
  }
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
