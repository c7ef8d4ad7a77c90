import { RunContext, Step, Workflow } from '../../src';
import { createApp, Gate, ident, sql, waitFor } from '../support';

let gate = new Gate();
/** Per tenant: how many steps run now, and the most at once. */
const tenants = new Map<string, { now: number; most: number }>();

/** One run per tenant at a time (the group of a run is its input's tenant); keyed starts are debounced. */
@Workflow('readd_grouped', { debounce: { period: '1h' }, concurrency: { limit: 1, by: (input: { tenant: string }) => input.tenant } })
class Grouped {
  @Step()
  async work(ctx: RunContext<{ tenant: string }>) {
    const t = tenants.get(ctx.input.tenant) ?? { now: 0, most: 0 };
    tenants.set(ctx.input.tenant, t);
    t.most = Math.max(t.most, ++t.now);
    try {
      await gate.wait(ctx.signal);
    } finally {
      t.now--;
    }
    return ctx.input.tenant;
  }
}

async function statusOf(schema: string, id: string): Promise<string> {
  return (await sql<{ status: string }>(`select status from ${ident(schema)}.runs where id = $1`, [id]))[0].status;
}

describe('a re-add that gives a run the newer input', () => {
  afterEach(() => gate.open());

  it("moves the run into the newer input's concurrency group: one run per tenant at a time still holds", async () => {
    gate = new Gate();
    tenants.clear();
    const t = await createApp({ workflows: [Grouped] });
    // tenant b's run is going (unkeyed: not debounced)
    const x = await t.durable.start(Grouped, { tenant: 'b' });
    await waitFor(async () => (await statusOf(t.schema, x.runId)) === 'running', { timeout: 30_000, message: "tenant b's run is running" });
    // a keyed run in its debounce wait, started for tenant a, takes tenant b's input
    const r = await t.durable.start(Grouped, { tenant: 'a' }, { key: 'doc:1' });
    expect(await t.durable.start(Grouped, { tenant: 'b' }, { key: 'doc:1' })).toEqual({ runId: r.runId, outcome: 'debounced' });
    expect((await t.durable.getRun(r.runId))!.input).toEqual({ tenant: 'b' });
    // its wait ends; then a run of tenant a becomes due
    await sql(`update ${ident(t.schema)}.runs set run_at = now() where id = $1`, [r.runId]);
    const y = await t.durable.start(Grouped, { tenant: 'a' });
    // tenant a's run begins; the debounced run, now tenant b's, waits for tenant b's run to end
    await waitFor(async () => (await statusOf(t.schema, y.runId)) !== 'pending' || (await statusOf(t.schema, r.runId)) !== 'pending', {
      timeout: 30_000,
      message: 'a run begins',
    });
    expect(await statusOf(t.schema, r.runId)).toBe('pending');
    expect(tenants.get('b')!.most).toBe(1);
    gate.open();
    await t.durable.waitForRun(r.runId, { timeout: 30_000 });
    expect(tenants.get('b')!.most).toBe(1);
  });
});
