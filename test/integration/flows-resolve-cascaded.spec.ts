/**
 * `FlowsStore.resolve` (an append's, a rerun's or a repair's resolution of deps that had already
 * finished): one statement, which reports the nodes it cancelled (for `durable.run.finished`) —
 * those down the graph included, each once, and none that an earlier resolution of the same
 * transaction cancelled. And the migration that makes the database report them
 * (`DurableFlowResolveCascaded`), up, down and up again on a schema with flows in progress.
 */
import { Client } from 'pg';
import { DataSource, type QueryRunner } from 'typeorm';
import { durableMigrations } from '../../migrations';
import { RunContext, Step, Workflow } from '../../src';
import { FlowsStore } from '../../src/store/flows.store';
import { createApp, databaseUrl, freshSchema, ident, sql } from '../support';

/** A workflow no worker runs here: its nodes stay where the test puts them. */
@Workflow('frc_idle')
class FrcIdle {
  @Step()
  async go(ctx: RunContext) {
    return ctx.input;
  }
}

@Workflow('frc_report')
class FrcReport {
  @Step()
  async go() {
    return null;
  }
}

describe('DAG flows: resolving from the store', () => {
  it('is one statement that returns the nodes it cancelled, down the graph, once each', async () => {
    const app = await createApp({ workflows: [FrcIdle, FrcReport], options: { worker: false } });
    const S = ident(app.schema);
    const { flowId, runIds } = await app.durable.startFlow(
      app.durable
        .flow()
        .add('a1', FrcIdle)
        .add('a2', FrcIdle)
        .add('b', FrcIdle, {}, { deps: ['a1'] })
        .add('c', FrcReport, {}, { deps: ['b'] })
        .add('d', FrcIdle, {}, { deps: ['b', 'c'] })
        .add('kept', FrcReport, {}, { deps: ['a1'], ignoreFailed: true })
        .add('e', FrcReport, {}, { deps: ['a2'] }),
    );
    // a1 and a2 fail with the flow trigger off: their edges stay open, as when a wake-up was missed
    await sql(`alter table ${S}.runs disable trigger runs_flow_deps_trg`);
    await sql(`update ${S}.runs set status = 'failed', finished_at = now() where id = any($1::uuid[])`, [[runIds.a1, runIds.a2]]);
    await sql(`alter table ${S}.runs enable trigger runs_flow_deps_trg`);

    const store = new FlowsStore(app.schema, `durable_${app.schema}`);
    const client = new Client({ connectionString: databaseUrl() });
    await client.connect();
    const statements: string[] = [];
    const q = {
      query: async (text: string, values?: unknown[]) => {
        statements.push(text);
        return (await client.query(text, values)).rows;
      },
    };
    try {
      await client.query('BEGIN');
      const first: string[] = [];
      expect(await store.resolve(q as never, flowId, ['a1'], ['failed'], first)).toBe(1); // kept woke
      expect(statements).toHaveLength(1);
      // b, then c behind b, then d behind both: each once
      expect(first.sort()).toEqual(['frc_idle', 'frc_idle', 'frc_report']);
      // a second resolution in the same transaction reports only what it cancelled
      const second: string[] = [];
      expect(await store.resolve(q as never, flowId, ['a2'], ['failed'], second)).toBe(0);
      expect(second).toEqual(['frc_report']);
      // and resolving again finds no open edge: nothing woken, nothing cancelled
      const third: string[] = [];
      expect(await store.resolve(q as never, flowId, ['a1', 'a2'], ['failed', 'failed'], third)).toBe(0);
      expect(third).toEqual([]);
      expect(statements).toHaveLength(3);
      await client.query('COMMIT');
    } finally {
      await client.end();
    }
    const status = async (name: keyof typeof runIds) => (await app.durable.getRun(runIds[name]))!.status;
    for (const name of ['b', 'c', 'd', 'e'] as const) expect(await status(name)).toBe('cancelled');
    expect(await status('kept')).toBe('pending');
    expect((await app.durable.getRun(runIds.d))!.error).toMatchObject({ reason: 'cancelled' });
    expect((await app.durable.getRun(runIds.b))!.error).toMatchObject({ reason: 'failed' });
  });
});

/** Inserts flow `flow` by SQL, as an earlier version stored it: nodes `[name, deps, workflow?]`; returns their ids by name. */
async function storedFlow(S: string, flow: string, nodes: [string, string[], string?][]): Promise<Record<string, string>> {
  await sql(`insert into ${S}.flows (id) values ($1)`, [flow]);
  const ids: Record<string, string> = {};
  for (const [name, deps, workflow = 'frc_idle'] of nodes) {
    const [row] = await sql(
      `insert into ${S}.runs (id, workflow, flow_id, name, deps, deps_left, status) values (gen_random_uuid(), $1, $2, $3, $4, $5, $6) returning id`,
      [workflow, flow, name, deps, deps.length, deps.length ? 'waiting' : 'pending'],
    );
    ids[name] = row.id;
    for (const dep of deps) await sql(`insert into ${S}.flow_deps (flow_id, dep_name, run_id) values ($1, $2, $3)`, [flow, dep, row.id]);
  }
  return ids;
}

describe('DAG flows: the migration DurableFlowResolveCascaded', () => {
  it('upgrades a schema with flows in progress, goes down to durable_flow_resolve alone, and up again', async () => {
    const schema = freshSchema();
    const S = ident(schema);
    const all = durableMigrations(schema);
    const at = all.findIndex((M) => M.name.startsWith('DurableFlowResolveCascaded'));
    const ds = new DataSource({ type: 'postgres', url: databaseUrl() });
    await ds.initialize();
    const runner: QueryRunner = ds.createQueryRunner();
    const chain: [string, string[], string?][] = [
      ['a', []],
      ['b', ['a']],
      ['c', ['b'], 'frc_report'],
    ];
    const statuses = async (ids: Record<string, string>) =>
      (await sql(`select status from ${S}.runs where id = any($1::uuid[]) order by name`, [[ids.b, ids.c]])).map((r) => r.status);
    const fail = (id: string) => sql(`update ${S}.runs set status = 'failed', finished_at = now() where id = $1`, [id]);
    // the functions that call durable_flow_resolve_cascaded
    const callers = async () =>
      (
        await sql(
          `select p.proname from pg_proc p join pg_namespace n on n.oid = p.pronamespace
           where n.nspname = $1 and p.prosrc like '%durable_flow_resolve_cascaded(%' order by p.proname`,
          [schema],
        )
      ).map((r) => r.proname);
    const callersUp = ['durable_flow_on_delete', 'durable_flow_on_finish', 'durable_flow_resolve'];
    const reporting = async () =>
      (await sql(`select to_regprocedure($1) is not null as yes`, [`${S}.durable_flow_resolve_cascaded(text, text[], text[])`]))[0].yes;
    try {
      for (const M of all.slice(0, at)) await new M().up(runner);
      // flows in progress before the upgrade
      const byTrigger = await storedFlow(S, 'by-trigger', chain);
      const direct = await storedFlow(S, 'direct', [...chain, ['kept', ['a']]]);
      await sql(`update ${S}.flow_deps set ignore_failed = true where flow_id = 'direct' and run_id = $1`, [direct.kept]);
      await new all[at]().up(runner);
      await new all[at]().up(runner); // re-runnable
      expect(await callers()).toEqual(callersUp);
      // the triggers' resolution (durable_flow_resolve) cancels as before
      await fail(byTrigger.a);
      expect(await statuses(byTrigger)).toEqual(['cancelled', 'cancelled']);
      // a's edges left open (a missed wake-up): a direct call resolves them and reports what it cancelled
      await sql(`alter table ${S}.runs disable trigger runs_flow_deps_trg`);
      await fail(direct.a);
      await sql(`alter table ${S}.runs enable trigger runs_flow_deps_trg`);
      const call = `select woke, cancelled_ids, cancelled_workflows from ${S}.durable_flow_resolve_cascaded('direct', array['a'], array['failed'])`;
      expect(await sql(call)).toEqual([{ woke: 1, cancelled_ids: [direct.b, direct.c], cancelled_workflows: ['frc_idle', 'frc_report'] }]);
      expect(await statuses(direct)).toEqual(['cancelled', 'cancelled']);
      expect(await sql(call)).toEqual([{ woke: 0, cancelled_ids: [], cancelled_workflows: [] }]);
      // a node of the previous version calls durable_flow_resolve (the wrapper): same resolution, woke as before
      const previous = await storedFlow(S, 'previous', [...chain, ['kept', ['a']]]);
      await sql(`update ${S}.flow_deps set ignore_failed = true where flow_id = 'previous' and run_id = $1`, [previous.kept]);
      await sql(`alter table ${S}.runs disable trigger runs_flow_deps_trg`);
      await fail(previous.a);
      await sql(`alter table ${S}.runs enable trigger runs_flow_deps_trg`);
      expect(await sql(`select ${S}.durable_flow_resolve('previous', array['a'], array['failed']) as woke`)).toEqual([{ woke: 1 }]);
      expect(await statuses(previous)).toEqual(['cancelled', 'cancelled']);
      expect((await sql(`select status from ${S}.runs where id = $1`, [previous.kept]))[0].status).toBe('pending');
      expect(await sql(`select count(*)::int as n from ${S}.flow_hooks where run_id = any($1::uuid[])`, [[previous.b, previous.c]])).toEqual([{ n: 2 }]);
      // down: durable_flow_resolve is the resolution itself again, and the triggers use it
      await new all[at]().down(runner);
      expect(await reporting()).toBe(false);
      expect(await callers()).toEqual([]);
      const down = await storedFlow(S, 'down', chain);
      await fail(down.a);
      expect(await statuses(down)).toEqual(['cancelled', 'cancelled']);
      // and up again
      await new all[at]().up(runner);
      expect(await reporting()).toBe(true);
      expect(await callers()).toEqual(callersUp);
      const again = await storedFlow(S, 'again', chain);
      await fail(again.a);
      expect(await statuses(again)).toEqual(['cancelled', 'cancelled']);
      // an unfinished node deleted: its dependants count it deleted (the delete trigger)
      const deleted = await storedFlow(S, 'deleted', chain);
      await sql(`delete from ${S}.runs where id = $1`, [deleted.a]);
      expect(await statuses(deleted)).toEqual(['cancelled', 'cancelled']);
      expect((await sql(`select error->>'reason' as reason from ${S}.runs where id = $1`, [deleted.b]))[0].reason).toBe('deleted');
    } finally {
      await runner.release();
      await ds.destroy();
    }
  });
});
