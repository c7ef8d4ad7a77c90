/**
 * The sample app's catch-up over HTTP (docs/keys.md, "sendEvent: hand the input to the holder"):
 * `PUT /articles/:id` starts `process_article` with `onDuplicate: { sendEvent: 'article_updated' }`,
 * so a save while the article is being processed goes to its running run, whose `catch_up` step
 * refreshes at the newer revision; a run that gets no save ends through the wait's timeout value.
 */
import type { INestApplication } from '@nestjs/common';
import { call, startSampleApp } from '../support/sample-app';
import { waitFor } from '../support';

/** Short catch-up window, so the timeout case ends in seconds (the sample's default is 5 minutes). */
const CATCH_UP = '2s';

describe('sample app: a save during processing reaches the running run (catch_up)', () => {
  let app: INestApplication | undefined;
  let base: string;

  beforeEach(async () => {
    ({ app, base } = await startSampleApp(undefined, { catchUpTimeout: CATCH_UP }));
  });

  afterEach(async () => {
    await app?.close().catch(() => undefined);
    app = undefined;
  });

  const run = async (runId: string) => (await call(base, 'GET', `/runs/${runId}`)).body;
  const completed = (runId: string) =>
    waitFor(
      async () => {
        const r = await run(runId);
        return r.status === 'completed' ? r : undefined;
      },
      { timeout: 30_000, message: `run ${runId} completed` },
    );
  const runsOf = async (id: number) =>
    (await call(base, 'GET', `/runs?workflow=process_article&key=${encodeURIComponent(`article:${id}`)}`)).body as { id: string }[];

  it('a save while summarize runs is handed to that run: no second run, it ends with the newer revision', async () => {
    // "[slow]": summarize takes 5 s, long enough to save the article meanwhile
    const created = await call(base, 'POST', '/articles', { title: 'Catch up', body: 'First revision [slow]. More.' });
    expect(created.status).toBe(201);
    const id = created.body.article.id as number;
    const runId = created.body.runId as string;
    await waitFor(
      async () => {
        const r = await run(runId);
        return r.status === 'running' && r.step === 'summarize';
      },
      { message: 'process_article is in its summarize step' },
    );

    const saved = await call(base, 'PUT', `/articles/${id}`, { title: 'Catch up', body: 'Second revision. More.' });
    expect(saved.status).toBe(200);
    expect(saved.body).toMatchObject({ id, rev: 1, process: { runId, outcome: 'sendEvent' } });
    // the save came while the step was still running: the event was kept for the wait ahead
    expect(await run(runId)).toMatchObject({ status: 'running', step: 'summarize' });

    const done = await completed(runId);
    expect(done.result).toEqual({ rev: 1, summary: 'Second revision.', caughtUp: 1 });
    expect((await runsOf(id)).map((r) => r.id)).toEqual([runId]);
    expect((await call(base, 'GET', `/articles/${id}`)).body).toMatchObject({ rev: 1, processedRev: 1, summary: 'Second revision.', status: 'summarized' });

    // once processing completed the key is kept (reuse: 'afterFailure'): a later save starts nothing,
    // and is still saved (the duplicate did not abort the edit's transaction)
    const later = await call(base, 'PUT', `/articles/${id}`, { title: 'Catch up', body: 'Third revision.' });
    expect(later.status).toBe(200);
    expect(later.body).toMatchObject({ id, rev: 2, process: null });
    expect((await runsOf(id)).map((r) => r.id)).toEqual([runId]);
    expect((await call(base, 'GET', `/articles/${id}`)).body).toMatchObject({ rev: 2, processedRev: 1 });
  }, 60_000);

  it('a run that gets no save ends through the timeout value of its catch_up wait', async () => {
    const created = await call(base, 'POST', '/articles', { title: 'Quiet', body: 'Only revision. Nothing else.' });
    expect(created.status).toBe(201);
    const id = created.body.article.id as number;
    const runId = created.body.runId as string;
    const waiting = await waitFor(
      async () => {
        const list = (await call(base, 'GET', '/runs?workflow=process_article&waitingFor=event')).body as { id: string }[];
        return list.find((r) => r.id === runId);
      },
      { message: 'process_article waits in catch_up' },
    );
    expect(waiting).toMatchObject({ step: 'catch_up', waitingFor: { kind: 'event', name: 'article_updated' } });

    const done = await completed(runId);
    expect(done.result).toEqual({ rev: 0, summary: 'Only revision.', caughtUp: null });
    expect((await runsOf(id)).map((r) => r.id)).toEqual([runId]);
    expect((await call(base, 'GET', `/articles/${id}`)).body).toMatchObject({ rev: 0, processedRev: 0, summary: 'Only revision.' });
  }, 60_000);
});
