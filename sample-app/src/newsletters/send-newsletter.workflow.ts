import { Logger } from '@nestjs/common';
import { OnRunCompleted, OnRunFailed, RunContext, RunInfo, Step, Workflow } from 'nestjs-durable';
import { CmsService } from '../articles/cms.service';

/** What `POST /newsletters` sends: a subject and the articles it lists. */
export interface NewsletterInput {
  subject: string;
  articleIds: number[];
}

/**
 * Sends a newsletter once per request: started by `POST /newsletters` with the client's
 * `Idempotency-Key` as its key, so a client that retries the POST (a timeout, a lost answer) gets
 * the same run back instead of a second mailing. Its lifecycle hooks log the outcome, once per
 * run, from whichever node is up.
 */
@Workflow('send_newsletter', { reuse: 'never' })
export class SendNewsletter implements OnRunCompleted, OnRunFailed {
  private readonly logger = new Logger('Newsletters');

  constructor(private readonly cms: CmsService) {}

  @Step()
  async compose(ctx: RunContext<NewsletterInput>) {
    const titles: string[] = [];
    for (const id of ctx.input.articleIds) titles.push((await this.cms.get(id)).title);
    return { subject: ctx.input.subject, titles };
  }

  @Step()
  async send(ctx: RunContext<NewsletterInput>) {
    // a real app hands the mail to its provider here, with ctx.runId as the provider's idempotency key
    return { sent: true, subject: ctx.input.subject, articles: ctx.input.articleIds.length };
  }

  onRunCompleted(run: RunInfo) {
    this.logger.log(`newsletter ${run.id} (key ${run.key}) sent`);
  }

  onRunFailed(run: RunInfo) {
    this.logger.error(`newsletter ${run.id} (key ${run.key}) failed: ${JSON.stringify(run.error)}`);
  }
}
