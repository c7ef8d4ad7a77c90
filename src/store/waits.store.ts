import type { Queryable } from './db';

/** One wait call of a step as recorded. */
export interface WaitRow {
  kind: string;
  name: string | null;
  until: Date | null;
  /** `until` has passed (by the database clock). */
  due: boolean;
  /** A call's children in call order; null where a retry is to start that child anew. */
  children: (string | null)[] | null;
  timed_out: boolean;
}

/** The children of a wait with their outcome. */
export interface ChildRow {
  id: string;
  workflow: string;
  status: string;
  result: unknown;
  error: unknown;
}

/**
 * Statements on `waits`: each wait call of a step by (run, step, call) — a sleep's end, an event
 * wait's deadline, the children a call started — so that a step that runs again finds them.
 */
export class WaitsStore {
  private readonly sql: Record<string, string>;

  constructor(schema: string) {
    const S = `"${schema}"`;
    const cols = `kind, name, until, until IS NOT NULL AND until <= now() AS due, children, timed_out`;
    this.sql = {
      upsert: `
        INSERT INTO ${S}.waits AS w (run_id, step, call, kind, name, until)
        -- the end is kept in whole milliseconds (rounded up), as JavaScript holds it: the run's
        -- wake-up time (set from it) is then exactly when the wait is due, never a little before
        VALUES ($1, $2, $3, $4, $5, CASE WHEN $6::float8 IS NULL THEN NULL
          ELSE date_trunc('milliseconds', now() + $6 * interval '1 millisecond' + interval '999 microseconds') END)
        ON CONFLICT (run_id, step, call) DO UPDATE SET kind = w.kind
        RETURNING ${cols}`,
      get: `SELECT ${cols} FROM ${S}.waits WHERE run_id = $1 AND step = $2 AND call = $3`,
      // only while the claim of epoch $5 owns the parent (on a node: a compensation given back keeps
      // its epoch), whose row stays locked until the children are inserted: a cancel of the parent
      // waits for them, then cascades to them
      // $6: the children the call had (a retry's, with gaps to fill), or null for a call's first;
      // $7: how many of $4 are started now (the others completed before): the step's count of
      // children going grows by them (a new count when the step is not the one counted)
      recordChildren: `
        WITH parent AS (
          SELECT id FROM ${S}.runs WHERE id = $1 AND epoch = $5 AND status IN ('running', 'compensating') AND node_id IS NOT NULL
          FOR NO KEY UPDATE
        ), ins AS (
          INSERT INTO ${S}.waits (run_id, step, call, kind, children) SELECT $1, $2, $3, 'children', $4::uuid[] FROM parent WHERE $6::uuid[] IS NULL
          ON CONFLICT (run_id, step, call) DO NOTHING RETURNING 1
        ), filled AS (
          UPDATE ${S}.waits SET children = $4::uuid[]
          WHERE run_id = $1 AND step = $2 AND call = $3 AND kind = 'children' AND $6::uuid[] IS NOT NULL
            AND children IS NOT DISTINCT FROM $6::uuid[] AND EXISTS (SELECT 1 FROM parent)
          RETURNING 1
        ), rec AS (
          SELECT 1 FROM ins UNION ALL SELECT 1 FROM filled
        ), mark AS (
          UPDATE ${S}.runs SET has_children = true, children_step = $2,
            children_wait = coalesce(children_wait, 0) + (children_step IS DISTINCT FROM $2)::int,
            children_open = CASE WHEN children_step IS DISTINCT FROM $2 THEN 0 ELSE coalesce(children_open, 0) END + $7
          WHERE id = (SELECT id FROM parent) AND EXISTS (SELECT 1 FROM rec)
          RETURNING children_wait
        )
        SELECT EXISTS (SELECT 1 FROM parent) AS owned, (SELECT children_wait FROM mark) AS wait`,
      // a wait whose timeout failed the step is forgotten; in a call's children, each that did not
      // complete (or was deleted, pruned, since) leaves a gap the retried step fills with a new one
      // (the retry's move of the run starts a new count of its children, runs_children_recount: the
      // children it had are counted no more, one an operator retried may go on)
      resetForRetry: `
        WITH failed AS (
          DELETE FROM ${S}.waits w USING ${S}.runs r
          WHERE w.run_id = $1 AND r.id = $1 AND w.step = r.step AND w.timed_out AND w.timeout_value IS NOT TRUE
        )
        UPDATE ${S}.waits w SET children = (
          SELECT array_agg(c.id ORDER BY x.n) FROM unnest(w.children) WITH ORDINALITY AS x(id, n)
          LEFT JOIN ${S}.runs c ON c.id = x.id AND c.status = 'completed')
        FROM ${S}.runs r
        WHERE w.run_id = $1 AND r.id = $1 AND w.step = r.step AND w.kind = 'children'
          AND (SELECT count(*) FROM ${S}.runs c WHERE c.id = ANY (w.children) AND c.status = 'completed') < cardinality(w.children)`,
      timedOut: `UPDATE ${S}.waits SET timed_out = true, timeout_value = $4 WHERE run_id = $1 AND step = $2 AND call = $3`,
      children: `
        SELECT c.id, c.workflow, c.status, c.result, c.error FROM unnest($1::uuid[]) WITH ORDINALITY AS x(id, n)
        JOIN ${S}.runs c ON c.id = x.id ORDER BY x.n`,
    };
  }

  /** Records wait call (run, step, call) unless it is recorded already; returns the recorded row. */
  async upsert(q: Queryable, runId: string, step: number, call: number, kind: string, name: string | null, forMs: number | null): Promise<WaitRow> {
    const [row] = await q.query<WaitRow>(this.sql.upsert, [runId, step, call, kind, name, forMs], 'durable_wait_upsert');
    return row;
  }

  /** The recorded wait call, or undefined. */
  async get(q: Queryable, runId: string, step: number, call: number): Promise<WaitRow | undefined> {
    const [row] = await q.query<WaitRow>(this.sql.get, [runId, step, call]);
    return row;
  }

  /**
   * Records the children of a call, `started` of which are started now, and flags and counts them
   * on the parent, while the claim of `epoch` owns it (its row locked until the transaction ends):
   * the number of the count they are in (each is inserted with it as `parent_wait`; the parent wakes
   * once its count of children going is 0), `exists` when the call already had them (or, filling
   * the gaps of `had`, when they were filled already), `notOwned` when the parent was cancelled or
   * recovered meanwhile.
   */
  async recordChildren(
    q: Queryable,
    runId: string,
    step: number,
    call: number,
    children: string[],
    started: number,
    epoch: number,
    had: (string | null)[] | null = null,
  ): Promise<{ wait: number } | 'exists' | 'notOwned'> {
    const [row] = await q.query<{ owned: boolean; wait: number | null }>(this.sql.recordChildren, [runId, step, call, children, epoch, had, started]);
    return !row.owned ? 'notOwned' : row.wait === null ? 'exists' : { wait: row.wait };
  }

  /**
   * Before `retry` of a failed run: forgets the waits of its failed step that would fail it again
   * (timed out without a `timeoutValue`), and the children of its calls that did not complete or
   * were deleted since, so the retried step waits anew and starts those children anew (the ones
   * that completed are kept, with their results).
   */
  async resetForRetry(q: Queryable, runId: string): Promise<void> {
    await q.query(this.sql.resetForRetry, [runId]);
  }

  /**
   * Marks a wait as timed out (so a later re-run of the step gets the same answer); `withValue`: it
   * returned its `timeoutValue` (a retry replays it) rather than failing the step (a retry waits anew).
   */
  async markTimedOut(q: Queryable, runId: string, step: number, call: number, withValue: boolean): Promise<void> {
    await q.query(this.sql.timedOut, [runId, step, call, withValue]);
  }

  /** The children with their status, result and error, in the given order. */
  children(q: Queryable, ids: string[]): Promise<ChildRow[]> {
    return q.query<ChildRow>(this.sql.children, [ids]);
  }
}
