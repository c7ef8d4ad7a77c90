/**
 * A crash in the middle of compensation: a node in a child process (test/fixtures/saga.js) is
 * killed with SIGKILL inside the second compensation; another node resumes the compensation from
 * its cursor — the compensation that had completed is not run again — and the run is compensated.
 */
import { EntityManager } from 'typeorm';
import { RunContext, Step, Workflow } from '../../src';
import { createApp, freshSchema, spawnNode, sql, waitFor } from '../support';

let effectsSchema = '';
/** The attempt of each compensation this process ran, in order. */
const attempts: string[] = [];

async function effect(ctx: RunContext, what: string) {
  await ctx.transaction((m: EntityManager) =>
    m.query(`insert into "${effectsSchema}".effects (run_id, what, node_id) values ($1, $2, 'survivor')`, [ctx.runId, what]),
  );
}

// the same workflow as the fixture (name, steps, compensations)
@Workflow('saga_crash')
class SagaCrash {
  @Step({ compensate: 'undoReserve', retry: { attempts: 3, initialDelay: 100 } })
  async reserve(ctx: RunContext) {
    ctx.put('reserved', true);
  }

  @Step({ compensate: 'undoCharge', retry: { attempts: 3, initialDelay: 100 } })
  async charge(ctx: RunContext) {
    ctx.put('charged', true);
  }

  @Step({ retry: { attempts: 1 } })
  async ship() {
    throw new Error('ship failed');
  }

  async undoCharge(ctx: RunContext) {
    attempts.push(`undoCharge ${ctx.attempt}`);
    await effect(ctx, 'undoCharge');
  }

  async undoReserve(ctx: RunContext) {
    attempts.push(`undoReserve ${ctx.attempt}`);
    await effect(ctx, 'undoReserve');
  }
}

describe('compensation across a crash (multi-process)', () => {
  it('a node killed mid-compensation: another node resumes at the compensation it was in as its next attempt, none runs twice', async () => {
    const schema = freshSchema();
    effectsSchema = schema;
    await sql(`create schema "${schema}"`);
    await sql(`create table "${schema}".effects (id serial primary key, run_id uuid not null, what text not null, node_id text not null)`);

    const victim = await spawnNode({ schema, nodeId: 'victim', fixture: 'saga.js', env: { HOLD_MS: '600000' } });
    const starter = await createApp({ schema, workflows: [SagaCrash], options: { worker: false } });
    const { runId } = await starter.durable.start('saga_crash');

    await victim.waitForLine(new RegExp(`^IN_COMP undoReserve ${runId} `), 20_000);
    const mid = await starter.durable.getRun(runId);
    expect(mid!.status).toBe('compensating');
    expect(mid!.nodeId).toBe('victim');
    victim.signal('SIGKILL');
    await victim.exited;

    // a new node: recovers the dead node's run (still compensating) and finishes the compensation
    const survivor = await createApp({ schema, workflows: [SagaCrash] });
    const done = await survivor.durable.waitForRun(runId, { timeout: 20_000 });
    expect(done.status).toBe('compensated');
    expect(done.error).toMatchObject({ message: 'ship failed', step: 'ship' });
    expect(done.context).toEqual({ reserved: true, charged: true });

    const rows = await sql<{ what: string; node_id: string }>(`select what, node_id from "${schema}".effects order by id`);
    // undoCharge ran once (on the victim); undoReserve's ctx.transaction had committed on the victim
    // before the kill, so its re-run on the survivor got the recorded result and wrote nothing more
    expect(rows).toEqual([
      { what: 'undoCharge', node_id: 'victim' },
      { what: 'undoReserve', node_id: 'victim' },
    ]);
    expect(victim.linesMatching(/^IN_COMP undoCharge /)).toHaveLength(1);
    // the attempt the kill interrupted counts, as a step's does: the survivor makes the second
    expect(attempts).toEqual(['undoReserve 2']);
    await waitFor(async () => (await sql(`select count(*)::int as n from "${schema}".nodes where id = 'victim'`))[0].n === 0);
  }, 60_000);
});
