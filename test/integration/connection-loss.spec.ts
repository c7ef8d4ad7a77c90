import { randomBytes } from 'crypto';
import { RunContext, Step, Workflow } from '../../src';
import { createApp, databaseUrl, Gate, sql, waitFor } from '../support';

let gate = new Gate();
const log: string[] = [];

@Workflow('connloss_two_steps')
class TwoSteps {
  @Step()
  async first(ctx: RunContext<{ n: number }>) {
    log.push(`first:${ctx.input.n}`);
    await gate.wait();
    return ctx.input.n;
  }

  @Step()
  async second(ctx: RunContext<{ n: number }>) {
    log.push(`second:${ctx.input.n}`);
    return { n: ctx.input.n };
  }
}

/** A database of its own, so that killing every connection to it touches no other test. */
async function ownDatabase(): Promise<{ name: string; url: string }> {
  const name = `d_${randomBytes(5).toString('hex')}`;
  await sql(`create database ${name}`);
  const url = new URL(databaseUrl());
  url.pathname = `/${name}`;
  return { name, url: url.toString() };
}

async function killConnections(dbName: string): Promise<number> {
  const rows = await sql(`select pg_terminate_backend(pid) as ok from pg_stat_activity where datname = $1`, [dbName]);
  return rows.length;
}

describe('losing database connections', () => {
  let dbName: string | undefined;
  beforeEach(() => {
    gate = new Gate();
    log.length = 0;
  });
  afterEach(async () => {
    gate.open();
  });
  afterAll(async () => {
    if (dbName) await sql(`drop database if exists ${dbName} with (force)`).catch(() => undefined);
  });

  it('a worker whose connections are all killed mid-step goes on: the run completes, new runs run', async () => {
    const db = await ownDatabase();
    dbName = db.name;
    const { durable } = await createApp({ workflows: [TwoSteps], options: { url: db.url } });
    const { runId } = await durable.start('connloss_two_steps', { n: 1 });
    await waitFor(() => log.includes('first:1'));

    const killed = await killConnections(db.name);
    expect(killed).toBeGreaterThan(0);
    gate.open();

    // (our own polling: a read that lands on a connection killed a moment ago may fail, and is retried)
    const finished = async (id: string) =>
      waitFor(
        async () => {
          const r = await durable.getRun(id);
          return r && ['completed', 'failed', 'cancelled'].includes(r.status) ? r : undefined;
        },
        { timeout: 20_000, interval: 50, message: `run ${id} finishes` },
      );
    const run = await finished(runId);
    expect(run).toMatchObject({ status: 'completed', result: { n: 1 } });
    expect(log.filter((l) => l === 'second:1')).toEqual(['second:1']);

    // starts and wake-ups work again (the LISTEN connection came back too)
    const t0 = Date.now();
    const next = await durable.start('connloss_two_steps', { n: 2 });
    expect((await finished(next.runId)).status).toBe('completed');
    expect(Date.now() - t0).toBeLessThan(10_000);
  });
});
