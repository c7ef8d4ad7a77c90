/**
 * Concurrency and rate limits across the cluster: three worker processes (test/fixtures/limits-node.js,
 * more slots than any limit) and an in-process node that starts the runs. Every step body logs
 * when it begins and ends (clock_timestamp, one clock for all processes): the most bodies ever
 * running at once never exceeds a limit — under churn and across a node killed mid-step — groups
 * run side by side and fairly, and no window of a rate limit's period holds more begun runs than it
 * allows.
 */
import { Step, Workflow } from '../../src';
import { createApp, freshSchema, ident, spawnNode, sql, type NodeProcess, type TestApp } from '../support';

// the same names and options as the fixture's workflows (the starting node computes each run's group)
@Workflow('lim_conc', { concurrency: 3 })
class Conc {
  @Step()
  async work() {}
}
@Workflow('lim_key', { concurrency: { limit: 1, by: 'key' } })
class ByKey {
  @Step()
  async work() {}
}
@Workflow('lim_fair', { concurrency: { limit: 2, by: (input: { tenant: string }) => input.tenant } })
class Fair {
  @Step()
  async work() {}
}
@Workflow('lim_rate', { rateLimit: { limit: 5, period: '1s' } })
class Rate {
  @Step()
  async work() {}
}

jest.setTimeout(180_000);

let starter: TestApp;
let schema: string;
let nodes: NodeProcess[] = [];

const spawn = (nodeId: string, env: Record<string, string> = {}) => spawnNode({ schema, nodeId, fixture: 'limits-node.js', env });

/** The most step bodies of `workflow` that overlapped (per group with `perGroup`); a body cut by a kill ends at `cut`. */
async function maxOverlap(workflow: string, perGroup: boolean, cut = 'now()'): Promise<number> {
  const [row] = await sql<{ n: number }>(
    `SELECT coalesce(max(n), 0)::int AS n FROM (
       SELECT (SELECT count(*) FROM ${ident(schema)}.lim_log b
               WHERE b.workflow = a.workflow ${perGroup ? 'AND b.grp = a.grp' : ''}
                 AND b.t_in <= a.t_in AND coalesce(b.t_out, ${cut}) > a.t_in) AS n
       FROM ${ident(schema)}.lim_log a WHERE a.workflow = $1) x`,
    [workflow],
  );
  return row.n;
}

async function allDone(t: TestApp, ids: string[]): Promise<void> {
  for (const id of ids) expect((await t.durable.waitForRun(id, { timeout: 120_000 })).status).toBe('completed');
}

beforeAll(async () => {
  schema = freshSchema();
  starter = await createApp({ workflows: [Conc, ByKey, Fair, Rate], schema, options: { worker: false } });
  await sql(`CREATE TABLE ${ident(schema)}.lim_log (run_id uuid, workflow text, grp text, node text, t_in timestamptz, t_out timestamptz)`);
  nodes = await Promise.all(['lim-a', 'lim-b', 'lim-c'].map((id) => spawn(id)));
});

describe('concurrency', () => {
  it('a limit of the whole workflow holds across three nodes under churn and across a node killed mid-step; its slots come back', async () => {
    const first = await starter.durable.startMany(
      Conc,
      Array.from({ length: 30 }, () => ({})),
    );
    // once some run, kill a node holding runs mid-step: they are recovered (nodeTimeout 1 s) and run elsewhere
    // the run that began last: the most of its step is left when the kill lands
    const [victim] = await waitForRows<{ node: string }>(
      `SELECT node FROM ${ident(schema)}.lim_log WHERE workflow = 'lim_conc' AND t_out IS NULL ORDER BY t_in DESC LIMIT 1`,
    );
    const killed = nodes.find((n) => n.nodeId === victim.node)!;
    killed.signal('SIGKILL');
    await killed.exited;
    const [{ at }] = await sql<{ at: string }>(`SELECT now()::text AS at`);
    nodes = [...nodes.filter((n) => n !== killed), await spawn(`${victim.node}-2`)];
    const second = await starter.durable.startMany(
      Conc,
      Array.from({ length: 20 }, () => ({})),
    );
    await allDone(
      starter,
      [...first, ...second].map((r) => (r as { runId: string }).runId),
    );
    const overlap = await maxOverlap('lim_conc', false, `'${at}'::timestamptz`);
    expect(overlap).toBeLessThanOrEqual(3);
    expect(overlap).toBe(3); // the limit is used, not just respected
    const [{ cut }] = await sql<{ cut: number }>(`SELECT count(*)::int AS cut FROM ${ident(schema)}.lim_log WHERE workflow = 'lim_conc' AND t_out IS NULL`);
    expect(cut).toBeGreaterThan(0); // the kill did cut runs mid-step (they ran again on another node)
  });

  it('by key: a limit per key does not limit the workflow: runs of different keys run side by side', async () => {
    const res = await starter.durable.startMany(
      ByKey,
      Array.from({ length: 18 }, (_, i) => ({ key: `k${i}` })),
    );
    await allDone(
      starter,
      res.map((r) => (r as { runId: string }).runId),
    );
    expect(await maxOverlap('lim_key', true)).toBe(1);
    expect(await maxOverlap('lim_key', false)).toBeGreaterThan(1);
  });

  it('fair between groups: a tenant with 200 due runs does not hold back a tenant with one; each tenant stays within its limit', async () => {
    const big = await starter.durable.startMany(
      Fair,
      Array.from({ length: 200 }, (_, i) => ({ input: { tenant: 'big', i } })),
    );
    const small = await starter.durable.start(Fair, { tenant: 'small' });
    await allDone(starter, [...big.map((r) => (r as { runId: string }).runId), small.runId]);
    const starts = await sql<{ grp: string; t_in: Date }>(`SELECT grp, t_in FROM ${ident(schema)}.lim_log WHERE workflow = 'lim_fair' ORDER BY t_in`);
    const smallStart = starts.find((s) => s.grp === 'small');
    expect(smallStart).toBeDefined();
    // with 2 at a time for big, the lone run of small begins among the first few once it is due,
    // not after big's 200 (counted from its start, so the time the start call took does not count)
    const smallDue = (await starter.durable.getRun(small.runId))!.createdAt;
    const bigBefore = starts.filter((s) => s.grp === 'big' && s.t_in > smallDue && s.t_in < smallStart!.t_in).length;
    expect(bigBefore).toBeLessThan(12);
    expect(await maxOverlap('lim_fair', true)).toBeLessThanOrEqual(2);
    expect(await maxOverlap('lim_fair', true)).toBe(2);
  });
});

describe('rate limit', () => {
  it('at most 5 runs begin in any window of 1 s across the nodes', async () => {
    const res = await starter.durable.startMany(
      Rate,
      Array.from({ length: 18 }, () => ({})),
    );
    const ids = res.map((r) => (r as { runId: string }).runId);
    await allDone(starter, ids);
    const [row] = await sql<{ most: number; span: number }>(
      `SELECT max((SELECT count(*) FROM ${ident(schema)}.runs b WHERE b.id = ANY($1::uuid[])
                     AND b.started_at >= a.started_at AND b.started_at < a.started_at + interval '1 second'))::int AS most,
              extract(epoch FROM max(a.started_at) - min(a.started_at))::float8 AS span
       FROM ${ident(schema)}.runs a WHERE a.id = ANY($1::uuid[])`,
      [ids],
    );
    expect(row.most).toBeLessThanOrEqual(5);
    expect(row.most).toBe(5);
    expect(row.span).toBeGreaterThanOrEqual(3); // 18 runs at 5 per second take more than 3 s
  });
});

/** Polls `query` until it returns rows. */
async function waitForRows<R extends object>(query: string): Promise<R[]> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const rows = await sql<R>(query);
    if (rows.length) return rows;
    if (Date.now() > deadline) throw new Error(`no rows: ${query}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
