/**
 * A node whose clock differs from the database's: the times the engine keeps (a run's deadline,
 * its timers) are the database's, so a node's clock ahead or behind changes none of them; and the
 * database's clock a claim returns is the time it claimed, not when its transaction began.
 */
import { Client } from 'pg';
import { RunContext, Step, Workflow } from '../../src';
import { Scheduler } from '../../src/schedules/scheduler';
import { createApp, databaseUrl, freshSchema, ident, sql, waitFor, waitForLockWait, withClockOff } from '../support';

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

@Workflow('skew_pruned')
class Pruned {
  @Step()
  async only() {
    return 'pruned';
  }
}

@Workflow('skew_ticked')
class Ticked {
  @Step()
  async only() {
    return 'ticked';
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
  it('a node clock stepped back an hour after a prune goes on pruning at the retention’s pace, not an hour later', async () => {
    const { durable } = await createApp({ schema: freshSchema(), workflows: [Pruned], options: { retention: { runs: '1s', activity: '1s' } } });
    const pruned = async (runId: string) => {
      await durable.waitForRun(runId, { timeout: 30_000 });
      await waitFor(async () => (await durable.getRun(runId)) === null, { timeout: 30_000, message: `run ${runId} is pruned by the maintenance loop` });
    };
    // a prune on the real clock, then the node's clock steps back an hour
    await pruned((await durable.start(Pruned, {})).runId);
    await withClockOff(-SKEW_MS, async () => pruned((await durable.start(Pruned, {})).runId));
  }, 150_000);

  it('a schedule’s first tick after it was stored fires on a node whose clock is behind; one from before it was stored does not', async () => {
    const app = await createApp({ schema: freshSchema(), workflows: [Ticked] });
    // the node's clock is two hours behind the database's: a cron at second :ss of every minute of
    // an hour two hours back (its ticks of that hour went by on the real clock), and two of its
    // ticks as the node names them, one a minute before the schedule is stored on the database's
    // clock and one 30 s after
    const tick = new Date(Math.ceil((Date.now() - 2 * SKEW_MS + 30_000) / 1000) * 1000);
    const copy = { name: 'behind', workflow: 'skew_ticked', timezone: 'UTC', cron: `${tick.getUTCSeconds()} * ${tick.getUTCHours()} * * *` };
    await app.durable.schedule(Ticked, copy.cron, { name: copy.name, timezone: 'UTC' });
    const scheduler = app.get(Scheduler);
    const fired = await withClockOff(-2 * SKEW_MS, async () => [
      await scheduler.fireTick(copy, new Date(tick.getTime() - 60_000), null),
      await scheduler.fireTick(copy, tick, null),
    ]);
    expect(fired).toEqual([{ fired: false }, expect.objectContaining({ fired: true })]);
    expect(await sql(`select tick_at from ${ident(app.schema)}.schedule_fires where schedule = 'behind'`)).toEqual([{ tick_at: tick }]);
  });
});
