import { RunContext, Step, Workflow } from '../../src';
import { runCli } from '../../src/cli/cli';
import { createApp, databaseUrl, freshSchema, RecordingLogger } from '../support';
import { PoolerProxy } from '../support/pooler-proxy';

/**
 * `transactionPooler: true` (PgBouncer in transaction mode): every connection the module, the
 * worker and the CLI make goes through a proxy that records what such a pooler would break on —
 * startup parameters it refuses, named prepared statements, LISTEN, session settings.
 */

@Workflow('pooler_steps')
class Steps {
  @Step()
  async first(ctx: RunContext<{ n: number }>) {
    await ctx.sleep(50);
    return ctx.input.n;
  }

  @Step()
  async second(ctx: RunContext<{ n: number }>) {
    return ctx.input.n * 2;
  }
}

let proxy: PoolerProxy;

beforeEach(async () => {
  const target = new URL(databaseUrl());
  proxy = new PoolerProxy(target.hostname, Number(target.port || 5432));
  await proxy.up();
});

afterEach(async () => {
  await proxy.down();
});

async function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(args, { stdout: (t) => out.push(t), stderr: (t) => err.push(t), env: { DATABASE_URL: proxy.url(databaseUrl()) } });
  return { code, stdout: out.join('\n'), stderr: err.join('\n') };
}

describe('transactionPooler', () => {
  it('the proxy sees what a transaction pooler breaks on when the option is off', async () => {
    const t = await createApp({ workflows: [Steps], options: { url: proxy.url(databaseUrl()) } });
    const { runId } = await t.durable.start(Steps, { n: 1 });
    expect(await t.durable.waitForRun(runId, { timeout: 30_000 })).toMatchObject({ status: 'completed' });
    expect(proxy.violations).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^startup parameter statement_timeout/),
        expect.stringMatching(/^named prepared statement/),
        expect.stringMatching(/^LISTEN/),
      ]),
    );
  });

  it('with the option, a node migrates, starts, claims, sleeps and finishes runs with none of it, and logs that it polls', async () => {
    const logger = new RecordingLogger();
    const t = await createApp({ workflows: [Steps], logger, options: { url: proxy.url(databaseUrl()), transactionPooler: true } });
    const runs = await Promise.all([1, 2, 3].map((n) => t.durable.start(Steps, { n })));
    for (const [i, { runId }] of runs.entries()) {
      expect(await t.durable.waitForRun(runId, { timeout: 30_000 })).toMatchObject({ status: 'completed', result: (i + 1) * 2 });
    }
    expect(logger.find('log', 'transactionPooler: no LISTEN').length).toBe(1);
    // the run went through the claim and the transition statements, unnamed
    expect(proxy.statements.some((s) => s.includes('SKIP LOCKED'))).toBe(true);
    expect(proxy.violations).toEqual([]);
  });

  it('the CLI with --transaction-pooler: migrate (also --concurrently), status and runs list use none of it', async () => {
    const schema = freshSchema();
    const migrated = await cli('migrate', '--concurrently', '--transaction-pooler', '--schema', schema);
    expect(migrated).toMatchObject({ code: 0, stderr: '' });
    expect(proxy.statements.some((s) => /CREATE (UNIQUE )?INDEX CONCURRENTLY/.test(s))).toBe(true);
    expect(await cli('migrate', '--transaction-pooler', '--schema', schema)).toMatchObject({ code: 0, stderr: '' });
    expect(await cli('status', '--transaction-pooler', '--schema', schema)).toMatchObject({ code: 0, stderr: '' });
    expect(await cli('runs', 'list', '--transaction-pooler', '--schema', schema)).toMatchObject({ code: 0, stderr: '' });
    expect(proxy.violations).toEqual([]);
  }, 180_000);
});
