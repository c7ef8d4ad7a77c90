import { DurableValidationError, RunContext, Step, Workflow } from '../../src';
import { createApp, ident, sql } from '../support';

/** Debounced; merged inputs join tenants, which its limits' by() refuses. */
@Workflow('readd_group_refused', {
  debounce: { period: '1h', merge: (held: { tenant: string }, incoming: { tenant: string }) => ({ tenant: `${held.tenant}+${incoming.tenant}` }) },
  concurrency: {
    limit: 1,
    by: (input: { tenant: string }) => {
      if (input.tenant.includes('+')) throw new Error('one tenant per run');
      return input.tenant;
    },
  },
})
class Refused {
  @Step()
  async work(ctx: RunContext<{ tenant: string }>) {
    return ctx.input.tenant;
  }
}

describe('a re-add whose merged input the limits refuse', () => {
  it('is refused with a DurableValidationError, and nothing is written: the run keeps its input, group and count of re-adds', async () => {
    const t = await createApp({ workflows: [Refused], options: { worker: false } });
    const r = await t.durable.start(Refused, { tenant: 'a' }, { key: 'doc:1' });
    const row = async () =>
      (
        await sql<{ input: unknown; group_key: string; readds: number }>(`select input, group_key, readds from ${ident(t.schema)}.runs where id = $1`, [
          r.runId,
        ])
      )[0];
    const before = await row();
    const activity = async () => (await t.durable.listActivity({ runId: r.runId })).length;
    const events = await activity();
    const err = await t.durable.start(Refused, { tenant: 'b' }, { key: 'doc:1' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DurableValidationError);
    expect((err as DurableValidationError).message).toMatch(/by\(input\) threw: one tenant per run/);
    expect(await row()).toEqual({ ...before, input: { tenant: 'a' }, group_key: 'a' });
    expect(await activity()).toBe(events);
  });
});
