import { RunContext, Step, Workflow } from '../../src';
import { DurableConnection } from '../../src/core/durable.connection';
import { RunAdmin } from '../../src/runs/run-admin';
import { inCallerTx } from '../../src/store/caller-tx';
import { Worker } from '../../src/worker/worker';
import { createApp, databaseUrl, freshSchema, waitFor, type TestApp } from '../support';
import { PoolerProxy } from '../support/pooler-proxy';

/**
 * A run made due again by an operator (retry, rerun) on a node that runs no worker wakes the
 * workers of the other nodes at once: with a 30 s poll, only a notification gets it picked up
 * within a few seconds. Behind a transaction pooler (no LISTEN) a retry is found by polling.
 */

let failing = true;

@Workflow('retry_wakeup')
class Flaky {
  @Step({ retry: { attempts: 1 } })
  async only() {
    if (failing) throw new Error('not yet');
    return 'done';
  }
}

@Workflow('retry_wakeup_once')
class Once {
  @Step()
  async only(ctx: RunContext) {
    return ctx.input;
  }
}

/** Well under the worker's 30 s poll interval. */
const PICKUP_MS = 5_000;

/** A worker node polling every 30 s and a node without a worker, on one schema. */
async function cluster(): Promise<{ node: TestApp; admin: TestApp }> {
  const schema = freshSchema();
  const node = await createApp({ schema, workflows: [Flaky, Once], options: { worker: { pollInterval: '30s' } } });
  const admin = await createApp({ schema, workflows: [Flaky, Once], options: { worker: false } });
  return { node, admin };
}

/** Waits until the node's worker runs nothing and has no claim out: from then on only a notification (or its poll) makes it claim. */
async function idle(node: TestApp): Promise<void> {
  const worker = node.get(Worker) as unknown as { claiming: boolean; running: Map<string, unknown> };
  await waitFor(() => worker.running.size === 0 && !worker.claiming, { message: 'the worker idle' });
}

/** A run of `retry_wakeup` failed on `node`, its worker idle since. */
async function failedRun(node: TestApp): Promise<string> {
  failing = true;
  const { runId } = await node.durable.start('retry_wakeup', null);
  expect((await node.durable.waitForRun(runId, { timeout: 10_000 })).status).toBe('failed');
  await idle(node);
  return runId;
}

/** Resolves once run `runId` completed, within {@link PICKUP_MS} of now (else fails). */
async function completesSoon(admin: TestApp, runId: string): Promise<void> {
  await waitFor(async () => (await admin.durable.getRun(runId))?.status === 'completed', {
    timeout: PICKUP_MS,
    message: `run ${runId} completed long before the worker's next poll`,
  });
}

describe('a run an operator makes due again is picked up at once', () => {
  it('retry from a node without a worker', async () => {
    const { node, admin } = await cluster();
    const runId = await failedRun(node);
    failing = false;
    await admin.durable.retry(runId);
    await completesSoon(admin, runId);
  });

  it("retry in a caller's transaction (the dashboard's): the wake-up comes with its commit", async () => {
    const { node, admin } = await cluster();
    const runId = await failedRun(node);
    failing = false;
    await inCallerTx(admin.get(DurableConnection).db, (tx) => admin.get(RunAdmin).retry(runId, tx));
    await completesSoon(admin, runId);
  });

  it('rerun from a node without a worker', async () => {
    const { node, admin } = await cluster();
    const first = await node.durable.start('retry_wakeup_once', 1);
    expect((await node.durable.waitForRun(first.runId, { timeout: 10_000 })).status).toBe('completed');
    await idle(node);
    const { runId } = await admin.durable.rerun(first.runId);
    await completesSoon(admin, runId);
  });

  it('with transactionPooler (no LISTEN), a retry is found by polling and uses nothing a transaction pooler breaks on', async () => {
    const target = new URL(databaseUrl());
    const proxy = new PoolerProxy(target.hostname, Number(target.port || 5432));
    await proxy.up();
    try {
      const node = await createApp({ workflows: [Flaky], options: { url: proxy.url(databaseUrl()), transactionPooler: true } });
      const runId = await failedRun(node);
      failing = false;
      await node.durable.retry(runId);
      expect(await node.durable.waitForRun(runId, { timeout: 10_000 })).toMatchObject({ status: 'completed', result: 'done' });
      expect(proxy.violations).toEqual([]);
      await node.close();
    } finally {
      await proxy.down();
    }
  });
});
