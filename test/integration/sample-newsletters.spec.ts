/**
 * The sample app's Nest integration over HTTP: `POST /newsletters` is an `@IdempotentStart` route
 * (a retried POST answers the same run, another body with the same key 422, no key 400), and the
 * module's errors reach clients through the exported `DurableExceptionFilter`.
 */
import type { INestApplication } from '@nestjs/common';
import { call, startSampleApp } from '../support/sample-app';
import { waitFor } from '../support';

describe('sample app: POST /newsletters (Idempotency-Key) and the exported exception filter', () => {
  let app: INestApplication | undefined;

  afterEach(async () => {
    await app?.close().catch(() => undefined);
    app = undefined;
  });

  it('one newsletter per Idempotency-Key: a retry answers the same run, another body 422, no key 400', async () => {
    const sample = await startSampleApp();
    app = sample.app;
    const { base } = sample;
    const article = (await call(base, 'POST', '/articles', { title: 'Weekly', body: 'News of the week.' })).body.article;
    const letter = { subject: 'This week', articleIds: [article.id] };

    const first = await call(base, 'POST', '/newsletters', letter, { 'Idempotency-Key': 'nl-1' });
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ runId: expect.any(String), outcome: 'created' });
    const retry = await call(base, 'POST', '/newsletters', letter, { 'Idempotency-Key': 'nl-1' });
    expect(retry.status).toBe(200);
    expect(retry.body).toEqual({ runId: first.body.runId, outcome: 'useExisting' });

    const other = await call(base, 'POST', '/newsletters', { ...letter, subject: 'Another' }, { 'Idempotency-Key': 'nl-1' });
    expect(other.status).toBe(422);
    expect(other.body).toMatchObject({ code: 'idempotency_key_reused', runId: first.body.runId, key: 'nl-1', workflow: 'send_newsletter' });
    expect((await call(base, 'POST', '/newsletters', letter)).status).toBe(400);

    const run = await waitFor(
      async () => {
        const r = (await call(base, 'GET', `/runs/${first.body.runId}`)).body;
        return r.status === 'completed' ? r : undefined;
      },
      { timeout: 30_000 },
    );
    expect(run.result).toEqual({ sent: true, subject: 'This week', articles: 1 });
    // after the run completed, a retry still answers it (reuse: 'never' keeps the key)
    expect((await call(base, 'POST', '/newsletters', letter, { 'Idempotency-Key': 'nl-1' })).body).toEqual({ runId: first.body.runId, outcome: 'useExisting' });
    const runs = (await call(base, 'GET', '/runs?workflow=send_newsletter')).body;
    expect(runs).toHaveLength(1);
  });

  it("the module's errors answer through DurableExceptionFilter: status, code and message", async () => {
    const sample = await startSampleApp();
    app = sample.app;
    const bad = await call(sample.base, 'GET', '/runs?cursor=not-a-run-id');
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ statusCode: 400, code: 'invalid', message: expect.stringContaining('cursor') });
  });
});
