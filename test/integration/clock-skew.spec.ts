/**
 * A node whose clock differs from the database's: the times the engine keeps (a run's deadline,
 * its timers) are the database's, so a node's clock ahead or behind changes none of them; and the
 * database's clock a claim returns is the time it claimed, not when its transaction began.
 */
import { Client } from 'pg';
import { RunContext, Step, Workflow } from '../../src';
import { createApp, databaseUrl, freshSchema, ident, sql, waitFor, waitForLockWait } from '../support';

/** How far the node's clock is off in these tests: an hour. */
const SKEW_MS = 3_600_000;

@Workflow('skew_quick', { timeout: '1m', retry: { attempts: 1 } })
class Quick {
  @Step()
  async only() {
    return 'done';
  }
}

@Workflow('skew_slow', { timeout: '1s', retry: { attempts: 1 } })
class Slow {
  /** Returns when its signal aborts (the run's deadline), or after 8 s. */
  @Step()
  async only(ctx: RunContext) {
    await new Promise((r) => {
      const timer = setTimeout(r, 8_000);
      ctx.signal.addEventListener('abort', () => r(clearTimeout(timer)));
    });
    return ctx.signal.aborted ? 'aborted' : 'ran out';
  }
}

let limitedBodies = 0;

@Workflow('skew_limited', { timeout: '1s', concurrency: 1, retry: { attempts: 1 } })
class Limited {
  @Step()
  async only() {
    limitedBodies++;
    return 'ran';
  }
}

/** Runs `fn` with this process's `Date.now()` off the database's clock by `offsetMs`. */
async function withClockOff<T>(offsetMs: number, fn: () => Promise<T>): Promise<T> {
  const realNow = Date.now.bind(Date);
  const spy = jest.spyOn(Date, 'now').mockImplementation(() => realNow() + offsetMs);
  try {
    return await fn();
  } finally {
    spy.mockRestore();
  }
}

describe('a node clock off the database clock', () => {
  it('a node whose clock is an hour ahead runs a run with a one-minute timeout to the end, not failing it at once; its attempt is timed on the database clock', async () => {
    const app = await createApp({ schema: freshSchema(), workflows: [Quick] });
    const run = await withClockOff(SKEW_MS, async () => {
      const { runId } = await app.durable.start(Quick, {});
      return app.durable.waitForRun(runId, { timeout: 10_000 });
    });
    expect(run).toMatchObject({ status: 'completed', result: 'done' });
    const [attempt] = await app.durable.getRunHistory(run.id);
    expect(Math.abs(attempt.startedAt.getTime() - run.startedAt!.getTime())).toBeLessThan(60_000);
  });

  it('a node whose clock is an hour behind aborts a running step at the run deadline of one second', async () => {
    const app = await createApp({ schema: freshSchema(), workflows: [Slow] });
    const started = Date.now();
    const run = await withClockOff(-SKEW_MS, async () => {
      const { runId } = await app.durable.start(Slow, {});
      return app.durable.waitForRun(runId, { timeout: 15_000 });
    });
    expect(run).toMatchObject({ status: 'failed', error: { name: 'TimeoutError' } });
    expect(Date.now() - started).toBeLessThan(6_000);
  });

  it('a claim of a limited workflow that waited for the workflow’s lock past the run’s deadline fails the run without running its step', async () => {
    const schema = freshSchema();
    // no maintenance pass (it would fail the pending run past its deadline) after the one at boot
    const app = await createApp({ schema, workflows: [Limited], options: { heartbeatInterval: '30s', nodeTimeout: '90s' } });
    const blocker = new Client({ connectionString: databaseUrl() });
    await blocker.connect();
    let runId = '';
    try {
      await blocker.query('BEGIN');
      await blocker.query(`SELECT 1 FROM ${ident(schema)}.workflow_controls WHERE workflow = 'skew_limited' FOR UPDATE`);
      ({ runId } = await app.durable.start(Limited, {}));
      await waitForLockWait([`${ident(schema)}.workflow_controls`, 'FOR UPDATE'], 'the claim waits for the workflow’s lock');
      await waitFor(
        async () =>
          (await sql<{ past: boolean }>(`SELECT now() > run_at + interval '1500 ms' AS past FROM ${ident(schema)}.runs WHERE id = $1`, [runId]))[0].past,
        {
          message: 'the run is past its deadline',
        },
      );
    } finally {
      await blocker.query('ROLLBACK');
      await blocker.end();
    }
    expect(await app.durable.waitForRun(runId, { timeout: 10_000 })).toMatchObject({ status: 'failed', error: { name: 'TimeoutError' } });
    expect(limitedBodies).toBe(0);
  });
});
