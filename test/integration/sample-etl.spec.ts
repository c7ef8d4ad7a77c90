/**
 * The sample app's nightly-ETL DAG flow over HTTP: POST /flows/nightly-etl fans out one node per
 * article and fans in to a report; GET /flows/:id/mermaid draws it.
 */
import type { INestApplication } from '@nestjs/common';
import { call, startSampleApp } from '../support/sample-app';
import { waitFor } from '../support';

describe('sample app: nightly-ETL flow', () => {
  let app: INestApplication | undefined;

  afterEach(async () => {
    await app?.close().catch(() => undefined);
    app = undefined;
  });

  it('fans out per article, fans in to a report, and serves the Mermaid diagram', async () => {
    const sample = await startSampleApp();
    app = sample.app;
    const { base } = sample;
    for (const n of [1, 2]) {
      const created = await call(base, 'POST', '/articles', { title: `ETL ${n}`, body: `Article number ${n} for the nightly run.` });
      expect(created.status).toBe(201);
    }
    const started = await call(base, 'POST', '/flows/nightly-etl');
    expect(started.status).toBe(201);
    const { flowId, nodes, report } = started.body;
    expect(nodes).toBeGreaterThanOrEqual(4); // snapshot + ≥ 2 articles + report
    const done = await waitFor(
      async () => {
        const run = (await call(base, 'GET', `/runs/${report}`)).body;
        return run.status === 'completed' ? run : undefined;
      },
      { timeout: 20_000 },
    );
    expect(done.result).toMatchObject({ flowId, articles: nodes - 2 });
    expect(done.result.words).toBeGreaterThan(0);
    const listed = await call(base, 'GET', `/flows/${flowId}`);
    expect(listed.body).toHaveLength(nodes);
    expect(listed.body.every((n: { status: string }) => n.status === 'completed')).toBe(true);
    const mermaid = await call(base, 'GET', `/flows/${flowId}/mermaid`);
    expect(mermaid.type).toMatch(/text\/plain/);
    expect(mermaid.body).toMatch(/^flowchart TD\n {4}snapshot\[etl_snapshot\] --> article_\d+\[etl_article_stats\]\n/);
    expect(mermaid.body).toMatch(/article_\d+\[etl_article_stats\] --> report\[etl_report\]/);
    expect((await call(base, 'GET', `/flows/${flowId}/dot`)).body).toMatch(/^digraph "nightly-etl"/);
    expect((await call(base, 'GET', '/flows/no-such-flow/mermaid')).status).toBe(404);
  });
});
