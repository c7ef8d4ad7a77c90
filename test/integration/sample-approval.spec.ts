/**
 * The sample app's approval flow over HTTP: POST /articles/:id/publish starts `publish_article`,
 * which waits for an editor (listed by GET /runs?waitingFor=input); POST /articles/:id/approve
 * provides the decision; the article ends published.
 */
import type { INestApplication } from '@nestjs/common';
import { call, startSampleApp } from '../support/sample-app';
import { waitFor } from '../support';

describe('sample app: editor approval (waitForInput + provideInput)', () => {
  let app: INestApplication | undefined;

  afterEach(async () => {
    await app?.close().catch(() => undefined);
    app = undefined;
  });

  it('POST /articles/:id/approve provides input to the run waiting for an editor', async () => {
    const sample = await startSampleApp();
    app = sample.app;
    const { base } = sample;

    const created = await call(base, 'POST', '/articles', { title: 'Waits', body: 'Runs that wait hold no worker. More text.' });
    expect(created.status).toBe(201);
    const id = created.body.article.id as number;

    // approving before any approval flow exists: 404
    expect((await call(base, 'POST', `/articles/${id}/approve`, { approved: true })).status).toBe(404);

    const started = await call(base, 'POST', `/articles/${id}/publish`);
    expect(started.status).toBe(201);
    const runId = started.body.runId as string;
    const waiting = await waitFor(async () => {
      const list = await call(base, 'GET', '/runs?workflow=publish_article&waitingFor=input');
      return list.body.find((r: { id: string }) => r.id === runId);
    });
    expect(waiting.waitingFor).toMatchObject({ kind: 'input', name: 'editor_approval' });

    const approved = await call(base, 'POST', `/articles/${id}/approve`, { approved: true, by: 'ed' });
    expect(approved.status).toBe(201);
    expect(approved.body.runId).toBe(runId);

    await waitFor(async () => (await call(base, 'GET', `/runs/${runId}`)).body.status === 'completed');
    const run = (await call(base, 'GET', `/runs/${runId}`)).body;
    expect(run.result).toEqual({ status: 'published', by: 'ed' });
    expect((await call(base, 'GET', `/articles/${id}`)).body.status).toBe('published');
  });
});
