/**
 * The sample app mounts the dashboard at /durable, read-write with an actor: an editor approves
 * an article from the run page's form, and the action is recorded with who did it.
 */
import type { INestApplication } from '@nestjs/common';
import { call, startSampleApp } from '../support/sample-app';
import { waitFor } from '../support';

describe('sample app: the dashboard at /durable', () => {
  let app: INestApplication | undefined;

  afterEach(async () => {
    await app?.close().catch(() => undefined);
    app = undefined;
  });

  it('shows the run waiting for an editor and provides the input from its form, recorded with the actor', async () => {
    const sample = await startSampleApp();
    app = sample.app;
    const { base } = sample;
    const created = await call(base, 'POST', '/articles', { title: 'Dashboards', body: 'See and operate runs in the browser.' });
    const id = created.body.article.id as number;
    const runId = (await call(base, 'POST', `/articles/${id}/publish`)).body.runId as string;
    await waitFor(async () => (await call(base, 'GET', '/runs?workflow=publish_article&waitingFor=input')).body.some((r: { id: string }) => r.id === runId));

    const overview = await fetch(`${base}/durable/`);
    expect(overview.status).toBe(200);
    expect(await overview.text()).toContain('publish_article');
    const page = await (await fetch(`${base}/durable/runs/${runId}`)).text();
    expect(page).toContain(`action="/durable/runs/${runId}/provide-input"`);

    const posted = await fetch(`${base}/durable/runs/${runId}/provide-input`, {
      method: 'POST',
      redirect: 'manual',
      headers: { origin: base, 'content-type': 'application/x-www-form-urlencoded', 'x-user': 'editor@example.com' },
      body: new URLSearchParams({ name: 'editor_approval', value: JSON.stringify({ approved: true, by: 'editor@example.com' }) }).toString(),
    });
    expect(posted.status).toBe(303);
    await waitFor(async () => (await call(base, 'GET', `/articles/${id}`)).body?.status === 'published', { timeout: 30_000 });
    const activity = await (await fetch(`${base}/durable/activity?kind=dashboard_action`)).text();
    expect(activity).toContain('editor@example.com');
  });
});
