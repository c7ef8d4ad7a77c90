import { Step, Workflow } from '../../src';
import { DurableConnection } from '../../src/core/durable.connection';
import { uuidv7 } from '../../src/domain/uuid';
import { RunsStore } from '../../src/store/runs.store';
import type { Transition } from '../../src/store/runs.types';
import { createApp, ident, sql } from '../support';

/**
 * The statement that writes a batch of transitions (checkpoints, completions, retries, waits): every
 * field arrives where it belongs, JSON null and a field left out both mean "none", and it reports
 * exactly the transitions it did not apply (their execution no longer owned the run).
 */

@Workflow('transition_write')
class Plain {
  @Step()
  async only() {
    return null;
  }
}

async function setup() {
  const t = await createApp({ workflows: [Plain], options: { worker: false } });
  const S = ident(t.schema);
  const runs = t.get(RunsStore);
  const { db } = t.get(DurableConnection);
  /** A run this node holds at lease `epoch`. */
  const running = async (epoch = 1): Promise<string> => {
    const id = uuidv7();
    await sql(
      `INSERT INTO ${S}.runs (id, workflow, status, node_id, epoch, attempt, started_at, context, results, error, comp_step, progress)
       VALUES ($1, 'transition_write', 'running', 'n1', $2, 3, now(), '{"kept":1}', '{"earlier":2}', '{"x":1}', 2, '{"old":1}')`,
      [id, epoch],
    );
    return id;
  };
  // SQL NULL told apart from a JSON null (node-postgres reads both as null)
  const nulls = 'error IS NULL AS no_error, result IS NULL AS no_result';
  const row = async (id: string) => (await sql<Record<string, unknown>>(`SELECT *, ${nulls} FROM ${S}.runs WHERE id = $1`, [id]))[0];
  return { t, S, runs, db, running, row };
}

it('writes each field of a completion, a checkpoint, a retry, a wait and a compensation retry where it belongs', async () => {
  const { runs, db, running, row, S } = await setup();
  const [done, next, retry, wait, comp] = [await running(), await running(), await running(), await running(), await running()];
  const from = Date.parse('2026-01-02T03:04:05.678Z');
  const ts: Transition[] = [
    {
      id: done,
      epoch: 1,
      status: 'completed',
      step: 1,
      context: { a: 'x' },
      result: 'the result',
      results: { only: 'the result' },
      error: null,
      final: true,
      tried_step: 0,
      tried_attempt: 1,
      tried_status: 'completed',
      tried_from_ms: from,
      tried_to_ms: from + 250,
      progress: { done: 3 },
    },
    {
      id: next,
      epoch: 1,
      status: 'running',
      step: 1,
      attempt: 1,
      context: { b: [1, 2] },
      results: { first: null },
      tried_step: 0,
      tried_attempt: 1,
      tried_status: 'completed',
      tried_from_ms: from,
      tried_to_ms: from,
    },
    {
      id: retry,
      epoch: 1,
      status: 'pending',
      attempt: 1,
      error: { name: 'Error', message: 'boom' },
      delay_ms: 60_000,
      tried_step: 0,
      tried_attempt: 1,
      tried_status: 'failed',
      tried_from_ms: from,
      tried_to_ms: from,
    },
    {
      id: wait,
      epoch: 1,
      status: 'waiting',
      attempt: 0,
      error: null,
      wait_kind: 'sleep',
      wait_name: null,
      wake_at: '2030-01-01T00:00:00.000Z',
      tried_step: 0,
      tried_attempt: 1,
      tried_status: 'suspended',
      tried_from_ms: from,
      tried_to_ms: from,
    },
    // a compensation that failed and waits for its retry: the run stays compensating, without a node
    { id: comp, epoch: 1, status: 'compensating', comp_step: 0, attempt: 2, error: { message: 'undo failed' }, delay_ms: 1_000, release: true },
  ];
  const { notApplied, tx } = await runs.transition(db, ts, 'n1');
  expect(notApplied.size).toBe(0);
  expect(tx).toBeNull();

  const d = await row(done);
  expect(d).toMatchObject({
    status: 'completed',
    step: 1,
    context: { a: 'x' },
    result: 'the result',
    results: { earlier: 2, only: 'the result' },
    no_error: true,
  });
  expect(d).toMatchObject({ progress: { done: 3 }, last_step: 0, last_attempt: 1, last_status: 'completed' });
  expect((d.finished_at as Date) instanceof Date).toBe(true);
  expect((d.last_started_at as Date).toISOString()).toBe('2026-01-02T03:04:05.678Z');
  expect((d.last_finished_at as Date).toISOString()).toBe('2026-01-02T03:04:05.928Z');

  const n = await row(next);
  // fields left out keep what the row had (result, comp_step, progress); a JSON null clears (error)
  expect(n).toMatchObject({ status: 'running', step: 1, attempt: 1, context: { b: [1, 2] }, results: { earlier: 2, first: null }, node_id: 'n1' });
  expect(n).toMatchObject({ no_result: true, finished_at: null, no_error: true, comp_step: 2, progress: { old: 1 } });

  const r = await row(retry);
  expect(r).toMatchObject({ status: 'pending', step: 0, attempt: 1, error: { name: 'Error', message: 'boom' }, node_id: null, context: { kept: 1 } });
  const [{ due_in_s }] = await sql<{ due_in_s: number }>(`SELECT extract(epoch FROM run_at - now())::float8 AS due_in_s FROM ${S}.runs WHERE id = $1`, [retry]);
  expect(due_in_s).toBeGreaterThan(50);
  expect(due_in_s).toBeLessThanOrEqual(60);

  const w = await row(wait);
  expect(w).toMatchObject({ status: 'waiting', attempt: 0, wait_kind: 'sleep', wait_name: null, node_id: null, no_error: true });
  expect((w.wake_at as Date).toISOString()).toBe('2030-01-01T00:00:00.000Z');

  const c = await row(comp);
  expect(c).toMatchObject({ status: 'compensating', comp_step: 0, attempt: 2, node_id: null, error: { message: 'undo failed' }, finished_at: null });

  // the attempts of the runs that go on are recorded beside them; the completed run keeps its own
  const attempts = await sql<{ run_id: string; status: string }>(`SELECT run_id, status FROM ${S}.step_attempts ORDER BY status`);
  expect(attempts).toEqual(
    expect.arrayContaining([
      { run_id: next, status: 'completed' },
      { run_id: retry, status: 'failed' },
      { run_id: wait, status: 'suspended' },
    ]),
  );
  expect(attempts).toHaveLength(3);
});

it('reports exactly the transitions it did not apply, told apart by lease epoch, and writes nothing for them', async () => {
  const { runs, db, running, row } = await setup();
  const owned = await running(2);
  const stale = await running(3);
  const finished = await running(1);
  const ts: Transition[] = [
    // the run was claimed again since (epoch 2 is current): the old execution's write is refused
    { id: owned, epoch: 1, status: 'completed', final: true, result: 'old' },
    { id: owned, epoch: 2, status: 'completed', final: true, result: 'new' },
    { id: stale, epoch: 2, status: 'running', step: 1 },
    { id: finished, epoch: 1, status: 'completed', final: true, result: 'first' },
  ];
  const first = await runs.transition(db, ts, 'n1');
  expect([...first.notApplied]).toEqual([ts[0], ts[2]]);
  expect(await row(owned)).toMatchObject({ status: 'completed', result: 'new' });
  expect(await row(stale)).toMatchObject({ status: 'running', step: 0 });
  // a run already finished takes no second outcome
  const again: Transition = { id: finished, epoch: 1, status: 'failed', final: true, error: { message: 'late' } };
  expect([...(await runs.transition(db, [again], 'n1')).notApplied]).toEqual([again]);
  expect(await row(finished)).toMatchObject({ status: 'completed', result: 'first', no_error: true });
});
