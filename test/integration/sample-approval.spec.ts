/**
 * The sample app's approval flow over HTTP: POST /articles/:id/publish starts `publish_article`,
 * which waits for an editor (listed by GET /runs?waitingFor=input); POST /articles/:id/approve
 * provides the decision; the article ends published.
 */
import type { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { AppModule } from '../../sample-app/src/app.module';
import { databaseUrl, freshSchema, waitFor } from '../support';

async function call(base: string, method: string, route: string, body?: unknown) {
  const res = await fetch(`${base}${route}`, {
    method,
    headers: body === undefined ? undefined : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as any };
}

describe('sample app: editor approval (waitForInput + provideInput)', () => {
  let app: INestApplication | undefined;

  afterEach(async () => {
    await app?.close().catch(() => undefined);
    app = undefined;
  });

  it('POST /articles/:id/approve provides input to the run waiting for an editor', async () => {
    app = await NestFactory.create(AppModule.register({ databaseUrl: databaseUrl(), durableSchema: freshSchema() }), { logger: false });
    await app.listen(0, '127.0.0.1');
    const base = (await app.getUrl()).replace('[::1]', '127.0.0.1');

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
