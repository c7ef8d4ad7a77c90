import { RunContext, Step, Workflow } from 'nestjs-durable';
import { CmsService } from './cms.service';

export interface PublishArticleInput {
  id: number;
}

/** What an editor sends to `POST /articles/:id/approve`. */
export interface EditorDecision {
  approved: boolean;
  by: string | null;
  note?: string;
}

/**
 * The approval flow: the article waits for an editor (`ctx.waitForInput`), without holding a worker,
 * for up to 7 days; `POST /articles/:id/approve` provides the decision, then `publish` applies it.
 * Started by `POST /articles/:id/publish` with the key `publish:<id>`.
 */
@Workflow('publish_article', { reuse: 'afterFailure' })
export class PublishArticle {
  constructor(private readonly cms: CmsService) {}

  @Step()
  async review(ctx: RunContext<PublishArticleInput>) {
    await this.cms.get(ctx.input.id); // the article exists
    // Not answered yet: this attempt ends here and the run is `waiting` (listRuns({ waitingFor: 'input' }));
    // once the editor answers, this step runs again from the top and the wait returns the decision.
    const decision = await ctx.waitForInput<EditorDecision>('editor_approval', {
      timeout: '7d',
      timeoutValue: { approved: false, by: null, note: 'no editor answered within 7 days' },
    });
    ctx.put('decision', decision);
    return decision;
  }

  @Step()
  async publish(ctx: RunContext<PublishArticleInput>) {
    const decision = ctx.get<EditorDecision>('decision')!;
    const status = decision.approved ? 'published' : 'rejected';
    await ctx.transaction((manager) => this.cms.setStatus(manager, ctx.input.id, status));
    return { status, by: decision.by };
  }
}
