/**
 * The sample app's workflows tested the way an app tests its own: with `nestjs-durable/testing`
 * (imported from the package, as the sample app imports `nestjs-durable`), the CMS replaced by a
 * fake, and time skipped instead of waited for — retry back-offs, the five-minute catch-up window,
 * the seven-day approval timeout and the five-minute cleanup schedule.
 */
import { DurableTestEnv } from 'nestjs-durable/testing';
import { ARTICLES_OPTIONS } from '../../sample-app/src/articles/articles.options';
import { CmsService } from '../../sample-app/src/articles/cms.service';
import { ProcessArticle } from '../../sample-app/src/articles/process-article.workflow';
import { PublishArticle } from '../../sample-app/src/articles/publish-article.workflow';
import { Cleanup } from '../../sample-app/src/maintenance/cleanup.workflow';

/** The CMS without a database: one article, and the writes the workflows make. */
class FakeCms {
  summaries: { id: number; summary: string; rev: number }[] = [];
  statuses: { id: number; status: string }[] = [];
  summarized = 0;
  constructor(private readonly body: string) {}
  async get(id: number) {
    return { id, body: this.body, rev: 1 };
  }
  summarize(body: string) {
    this.summarized++;
    return body.trim().split('.')[0];
  }
  async saveSummary(_manager: unknown, id: number, summary: string, rev: number) {
    this.summaries.push({ id, summary, rev });
  }
  async setStatus(_manager: unknown, id: number, status: string) {
    this.statuses.push({ id, status });
  }
}

let env: DurableTestEnv | undefined;
afterEach(() => env?.close());

async function articlesEnv(cms: FakeCms): Promise<DurableTestEnv> {
  env = await DurableTestEnv.create({
    providers: [ProcessArticle, PublishArticle, CmsService, { provide: ARTICLES_OPTIONS, useValue: { catchUpTimeout: '5m' } }],
    configure: (builder) => builder.overrideProvider(CmsService).useValue(cms),
  });
  return env;
}

describe('sample app workflows with the testing kit', () => {
  it('process_article: a flaky summarizer is retried, the catch-up window ends, the summary is saved once', async () => {
    const cms = new FakeCms('[flaky] Durable runs survive crashes. They also retry.');
    const e = await articlesEnv(cms);
    const { runId } = await e.durable.start(ProcessArticle, { id: 1 }, { key: 'article:1' });
    // two failed attempts (back-offs of 1 s and 2 s), then the catch-up wait of 5 minutes: each
    // round runs what is due, then moves the next wake-up into the past
    for (let round = 0; round < 6 && (await e.durable.getRun(runId))?.status !== 'completed'; round++) {
      await e.runUntilIdle();
      await e.skipTime('5m');
    }
    const run = await e.durable.getRun(runId);
    expect(run).toMatchObject({ status: 'completed', result: { rev: 1, summary: 'Durable runs survive crashes', caughtUp: null } });
    expect(cms.summarized).toBe(1); // the third attempt
    expect(cms.summaries).toEqual([{ id: 1, summary: 'Durable runs survive crashes', rev: 1 }]);
  });

  it('publish_article: no editor within 7 days rejects the article', async () => {
    const cms = new FakeCms('Waits hold no worker.');
    const e = await articlesEnv(cms);
    const { runId } = await e.durable.start(PublishArticle, { id: 2 }, { key: 'publish:2' });
    await e.runUntilIdle();
    expect((await e.durable.getRun(runId))?.status).toBe('waiting');
    await e.skipTime('7d');
    await e.runUntilIdle();
    expect(await e.durable.getRun(runId)).toMatchObject({ status: 'completed', result: { status: 'rejected', by: null } });
    expect(cms.statuses).toEqual([{ id: 2, status: 'rejected' }]);
  });

  it('publish_article: an editor’s approval publishes it', async () => {
    const cms = new FakeCms('Waits hold no worker.');
    const e = await articlesEnv(cms);
    const { runId } = await e.durable.start(PublishArticle, { id: 3 }, { key: 'publish:3' });
    await e.runUntilIdle();
    await e.durable.provideInput(runId, 'editor_approval', { approved: true, by: 'ed' });
    await e.runUntilIdle();
    expect(await e.durable.getRun(runId)).toMatchObject({ status: 'completed', result: { status: 'published', by: 'ed' } });
    expect(cms.statuses).toEqual([{ id: 3, status: 'published' }]);
  });

  it('cleanup: fired by its schedule when five minutes pass, or on demand', async () => {
    env = await DurableTestEnv.create({ providers: [Cleanup] });
    await env.skipTime('5m');
    await env.runUntilIdle();
    const [scheduled] = await env.durable.listRuns({ workflow: Cleanup });
    expect(scheduled).toMatchObject({ status: 'completed', key: 'cleanup', result: expect.objectContaining({ runs: 0, activity: 0 }) });

    const { runId } = await env.fireSchedule('cleanup');
    await env.runUntilIdle();
    expect(runId).not.toBe(scheduled.id); // the first cleanup had finished: its key moved on
    expect(await env.durable.listRuns({ workflow: Cleanup })).toHaveLength(2);
  });
});
