import { Step, Workflow } from '../../src';
import { DurableConnection } from '../../src/core/durable.connection';
import { uuidv7 } from '../../src/domain/uuid';
import { NodesStore } from '../../src/store/nodes.store';
import { RunsStore } from '../../src/store/runs.store';
import type { Transition } from '../../src/store/runs.types';
import { createApp, ident, sql } from '../support';

/**
 * Fencing of a compensating run recovered from a dead node: recovery leaves it `compensating`
 * (without a node, for any node to claim), so the lease epoch alone must tell the dead node's late
 * writes apart — the writes of the execution that lost the run must all be refused.
 */

@Workflow('comp_fence')
class Saga {
  @Step({ compensate: 'undo' })
  async only() {
    return null;
  }

  async undo() {}
}

it('a dead node whose compensating run was recovered writes nothing for it afterwards (outcome, progress) and learns at its next beat that it lost it', async () => {
  const t = await createApp({ workflows: [Saga], options: { worker: false } });
  const S = ident(t.schema);
  const runs = t.get(RunsStore);
  const nodes = t.get(NodesStore);
  const { db } = t.get(DurableConnection);
  const id = uuidv7();
  // node `ghost` was compensating the run at lease epoch 4, and has not beaten for an hour
  await sql(`INSERT INTO ${S}.nodes (id, info, heartbeat_at) VALUES ('ghost', '{}', now() - interval '1 hour')`);
  await sql(
    `INSERT INTO ${S}.runs (id, workflow, status, node_id, epoch, attempt, started_at, comp_step, error)
     VALUES ($1, 'comp_fence', 'compensating', 'ghost', 4, 1, now(), 0, '{"message":"boom"}')`,
    [id],
  );
  expect(await nodes.recoverDead(db, 60_000)).toEqual({ nodes: 1, runs: 1 });
  expect((await sql(`SELECT status, node_id FROM ${S}.runs WHERE id = $1`, [id]))[0]).toEqual({ status: 'compensating', node_id: null });

  // the ghost wakes up: its compensation ended, and it writes the run's end under the epoch it had
  const late: Transition = { id, epoch: 4, status: 'compensated', final: true, comp_step: -1 };
  expect([...(await runs.transition(db, [late], 'ghost')).notApplied]).toEqual([late]);
  // its next beat reports the run lost (so the execution stops) and writes none of its progress
  const beat = await nodes.beat(db, {
    nodeId: 'ghost',
    info: {},
    running: [{ id, epoch: 4 }],
    progress: [{ id, epoch: 4, value: { late: true } }],
    leaseMs: 60_000,
    answeredBelow: 1,
    firstClaim: 1,
    process: uuidv7(),
    giveBack: false,
  });
  expect(beat.lost).toEqual([id]);
  const [row] = await sql(`SELECT status, node_id, progress, finished_at FROM ${S}.runs WHERE id = $1`, [id]);
  expect(row).toEqual({ status: 'compensating', node_id: null, progress: null, finished_at: null });
});
