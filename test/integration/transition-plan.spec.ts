/**
 * How the statement that writes transitions finds its runs: by `runs_pkey`, one row per transition,
 * also when `runs` is small enough that the whole table is a few hundred pages. Planned for a batch
 * of the 100 rows the planner assumes of a function, a completion of one run would scan every run.
 */
import { Client } from 'pg';
import { Step, Workflow } from '../../src';
import { uuidv7 } from '../../src/domain/uuid';
import { RunsStore } from '../../src/store/runs.store';
import { createApp, databaseUrl, explainingQueryable, ident, sql } from '../support';

@Workflow('transition_plan')
class Plain {
  @Step()
  async only() {
    return null;
  }
}

it.each(['force_custom_plan', 'force_generic_plan'])(
  "a run's completion on a runs table of 5,000 finished runs reads its own row, not the table (%s)",
  async (mode) => {
    const t = await createApp({ workflows: [Plain], options: { worker: false } });
    const S = ident(t.schema);
    await sql(`
    INSERT INTO ${S}.runs (id, workflow, status, input, result, step, attempt, run_at, started_at, finished_at)
    SELECT gen_random_uuid(), 'transition_plan', 'completed', jsonb_build_object('i', g), 'null', 1, 1, now(), now(), now()
    FROM generate_series(1, 5000) g`);
    const id = uuidv7();
    await sql(
      `INSERT INTO ${S}.runs (id, workflow, status, node_id, epoch, attempt, started_at) VALUES ($1, 'transition_plan', 'running', 'n1', 1, 1, now())`,
      [id],
    );
    await sql(`ANALYZE ${S}.runs`);

    const client = new Client({ connectionString: databaseUrl() });
    await client.connect();
    let read = 0;
    try {
      await client.query(`SET plan_cache_mode = ${mode}`);
      const explaining = explainingQueryable(client, 'runs', (rows) => (read += rows));
      const now = Date.now();
      // (explained, the statement runs: it completes the run; run again after, it finds it completed)
      await t.get(RunsStore).transition(
        explaining,
        [
          {
            id,
            epoch: 1,
            status: 'completed',
            step: 1,
            result: null,
            results: { only: null },
            error: null,
            final: true,
            tried_step: 0,
            tried_attempt: 1,
            tried_status: 'completed',
            tried_from_ms: now - 1,
            tried_to_ms: now,
          },
        ],
        'n1',
      );
    } finally {
      await client.end();
    }
    expect(await sql(`SELECT status FROM ${S}.runs WHERE id = $1`, [id])).toEqual([{ status: 'completed' }]);
    // its own row (explained; the statement then runs unexplained), not the 5,001 of the table
    expect(read).toBeLessThan(10);
  },
);
