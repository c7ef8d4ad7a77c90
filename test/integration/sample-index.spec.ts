/**
 * The sample app's debounced search index over HTTP: five edits of an article in a burst become
 * one `index_article` run (key `article:<id>`) with the last revision.
 */
import type { INestApplication } from '@nestjs/common';
import { call, startSampleApp } from '../support/sample-app';
import { waitFor } from '../support';

describe('sample app: debounced indexing (PUT /articles/:id)', () => {
  let app: INestApplication | undefined;

  afterEach(async () => {
    await app?.close().catch(() => undefined);
    app = undefined;
  });

  it('a burst of five edits becomes one index_article run with the last revision', async () => {
    const sample = await startSampleApp();
    app = sample.app;
    const { base } = sample;
    const created = await call(base, 'POST', '/articles', { title: 'Index', body: 'one two three' });
    const id = created.body.article.id as number;

    const edits = [];
    for (let i = 1; i <= 5; i++) edits.push(await call(base, 'PUT', `/articles/${id}`, { title: 'Index', body: `edit ${i} ${'w '.repeat(i)}` }));
    expect(edits.map((e) => e.status)).toEqual([200, 200, 200, 200, 200]);
    const runIds = new Set(edits.map((e) => e.body.index.runId));
    expect(runIds.size).toBe(1);
    expect(edits.map((e) => e.body.index.outcome)).toEqual(['created', 'debounced', 'debounced', 'debounced', 'debounced']);

    const [runId] = runIds;
    const run = await waitFor(
      async () => {
        const r = (await call(base, 'GET', `/runs/${runId}`)).body;
        return r.status === 'completed' ? r : undefined;
      },
      { timeout: 30_000 },
    );
    expect(run.result).toEqual({ id, rev: 5, words: 7 });
    const runs = (await call(base, 'GET', `/runs?workflow=index_article`)).body;
    expect(runs.filter((r: { key: string }) => r.key === `article:${id}`)).toHaveLength(1);
  }, 60_000);
});
