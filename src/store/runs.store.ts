import { sqlState, type Queryable } from './db';
import type { TxMark } from './activity.store';
import type { WaitRow } from './waits.store';
import { runColumns, type RunRow } from './run-row';
import { FINISHED_STATUSES, GOING_STATUSES, type RunStatus } from '../domain/run-info';

/** A run to insert. */
export interface NewRun {
  id: string;
  workflow: string;
  key: string | null;
  holds_key: boolean;
  input: unknown;
  /** ISO time; null = now. */
  run_at: string | null;
  timeout_ms: number | null;
  parent_id?: string | null;
  runs_after_id?: string | null;
  trace?: Record<string, string> | null;
  /** Debounced runs: the latest time a restarted debounce wait may reach (null = no cap). */
  debounce_until?: string | null;
}

/** What a keyed start's statement did: inserted the run, or found a holder whose status settles the start (`rejected`: with KeyTakenError, else useExisting). */
export type StartAnswer = 'created' | { holderId: string; rejected: boolean };

/** A start for {@link RunsStore.insertOrAnswer}: the run, and the holder statuses that settle it. */
export interface StartRow {
  run: NewRun;
  settled: { useExisting: RunStatus[]; reject: RunStatus[] };
}

/** The holder of a key, locked, as the key policy needs it. */
export interface HolderRow {
  id: string;
  status: RunStatus;
  picked_up: boolean;
  debouncing: boolean;
  input: unknown;
}

/** A claimed run as the executor needs it. */
export type ClaimedRow = Partial<Pick<RunRow, 'flow_id' | 'flow_name' | 'name' | 'deps'>> & Pick<
  RunRow,
  'id' | 'workflow' | 'key' | 'input' | 'context' | 'step' | 'attempt' | 'epoch' | 'deadline_at' | 'parent_id' | 'trace' | 'created_at' | 'run_at'
  // waits/sagas: `compensating` when claimed to go on compensating (cursor `comp_step`, original `error`)
  | 'status' | 'comp_step' | 'error'
> & {
  /** The wait calls recorded for the claimed step, by call number (so a resumed step needs no round trip to find them). */
  waits?: Record<string, WaitRow> | null;
};

/** One state change of a claimed run, applied only while this execution still owns it. */
export interface Transition {
  id: string;
  epoch: number;
  status: RunStatus;
  step?: number;
  attempt?: number;
  context?: Record<string, unknown>;
  result?: unknown;
  /** Merged into `results` (step name → return value). */
  results?: Record<string, unknown>;
  error?: unknown;
  /** Due again after this many ms (retries). */
  delay_ms?: number;
  final?: boolean;
  /** `waiting`: what for (`sleep` | `event` | `input` | `children`), the event/input name, when its timer ends (ISO). */
  wait_kind?: string;
  wait_name?: string | null;
  wake_at?: string | null;
  /** `compensating`: the next step index whose compensation runs. */
  comp_step?: number;
  /** Give the run up (node_id = NULL) while keeping its status (a compensation retry waits for its delay). */
  release?: boolean;
}

/** The runs one statement ended (`cancel`, the timeout sweep). */
export interface EndedRuns {
  ids: string[];
  /**
   * Set when one of them held its key: the statement's transaction, in which the key trigger may
   * have handed that key to the run waiting behind it (`ActivityStore.runAgainHandoffs`).
   */
  tx: TxMark | null;
}

/** RETURNING list of a statement that ends runs, read by {@link endedRuns}. */
const ENDED = `id, holds_key, now()::text AS tx_at, (txid_current() % 4294967296)::text AS tx_xid`;

/** The tables the maintenance pass analyzes when their statistics are far behind. */
export const ANALYZED_TABLES = ['activity', 'runs'] as const;
/** One of {@link ANALYZED_TABLES}. */
export type AnalyzedTable = (typeof ANALYZED_TABLES)[number];

/** Filters of `listRuns`. */
export interface RunFilter {
  workflow?: string;
  key?: string;
  status?: RunStatus[];
  flowId?: string;
  parentId?: string;
  cursor?: string;
  limit: number;
  /** Only `waiting` runs that wait for this (`sleep`, `event`, `input`, `children`). */
  waitingFor?: string;
}

/**
 * A key's holder, as the `runs_key` index (workflow, key, (holds_key OR NULL)) answers it: its third
 * column is true for the holder only (migration DurableKeyIndex1733040005000). A plain `holds_key`
 * would read every run of the key.
 */
export const holdsKey = (alias: string): string => `(${alias}.holds_key OR NULL) IS TRUE`;

/**
 * The distinct `workflow` values of `table` where `column IS NOT NULL`, as an array expression read
 * from an index that leads with `workflow` under that predicate: one descent per workflow (a loose
 * index scan, which PostgreSQL before 18 does not do itself). With it, a filter on `key` alone uses
 * the (workflow, key, …) index as `workflow = ANY(…) AND key = $n` instead of reading every row.
 */
export const indexedWorkflows = (table: string, column: 'key' | 'workflow'): string => `ARRAY(
  WITH RECURSIVE w AS (
    (SELECT workflow FROM ${table} WHERE ${column} IS NOT NULL ORDER BY workflow LIMIT 1)
    UNION ALL
    SELECT (SELECT t.workflow FROM ${table} t WHERE t.${column} IS NOT NULL AND t.workflow > w.workflow ORDER BY t.workflow LIMIT 1)
    FROM w WHERE w.workflow IS NOT NULL
  ) SELECT workflow FROM w WHERE workflow IS NOT NULL)`;

/**
 * Whether Postgres refused a statement because the key already has a holder (a unique violation
 * of `runs_key`): what a statement that makes a run the holder without `ON CONFLICT` meets when
 * a start committed a holder of that key meanwhile.
 */
export function isKeyConflict(err: unknown): boolean {
  return sqlState(err) === '23505' && (err as { constraint?: unknown }).constraint === 'runs_key';
}

/** The insert's arbiter: the unique `runs_key` index (a second holder of a key conflicts). */
const ON_KEY_CONFLICT = 'ON CONFLICT (workflow, key, (holds_key OR NULL)) WHERE key IS NOT NULL DO NOTHING';

const INSERT_COLUMNS = `id uuid, workflow text, key text, holds_key boolean, input jsonb, run_at timestamptz,
  timeout_ms integer, parent_id uuid, runs_after_id uuid, trace jsonb, debounce_until timestamptz`;

/**
 * `runs` as the JSON array a `jsonb_to_recordset` reads, without the top-level null fields (a
 * missing field reads as NULL, like a null one): less to send and ~15% less to parse per row.
 */
function recordset(runs: object[]): string {
  return JSON.stringify(
    runs.map((run) => {
      const present: Record<string, unknown> = {};
      for (const field in run) {
        const value = (run as Record<string, unknown>)[field];
        if (value !== null && value !== undefined) present[field] = value;
      }
      return present;
    }),
  );
}

/** Every status, each a bit of the masks `insertOrAnswer` sends per start (a few bytes, not arrays). */
const STATUS_BITS: readonly RunStatus[] = [...GOING_STATUSES, ...FINISHED_STATUSES];
const STATUS_BITS_SQL = `ARRAY[${STATUS_BITS.map((st) => `'${st}'`).join(', ')}]::text[]`;

/** Orders runs by workflow, then key (no key first). */
function compareKeys(a: NewRun, b: NewRun): number {
  if (a.workflow !== b.workflow) return a.workflow < b.workflow ? -1 : 1;
  if (a.key === b.key) return 0;
  if (a.key === null) return -1;
  if (b.key === null) return 1;
  return a.key < b.key ? -1 : 1;
}

/** Bit masks already computed, by (memoized) status list. */
const MASKS = new WeakMap<readonly RunStatus[], number>();

/** The bit mask of `statuses` over {@link STATUS_BITS}, computed once per (memoized) list. */
function statusBits(statuses: readonly RunStatus[]): number {
  let mask = MASKS.get(statuses);
  if (mask === undefined) {
    mask = 0;
    for (const st of statuses) mask |= 1 << STATUS_BITS.indexOf(st);
    MASKS.set(statuses, mask);
  }
  return mask;
}


/** Every statement on the `runs` table; `S` is the validated, quoted schema. */
export class RunsStore {
  private readonly sql: Record<string, string>;

  constructor(
    schema: string,
    /** Channel the workers LISTEN on. */
    readonly channel: string,
  ) {
    const S = `"${schema}"`;
    // The runs of $1 (JSON array) whose key is free, and one wake-up for the workers ($2) if any is due.
    // Without keys there is nothing to conflict on: no ON CONFLICT, so no speculative insertion per row.
    const insertAndNotify = (keyed: boolean, source = `jsonb_to_recordset($1::jsonb) AS v(${INSERT_COLUMNS})`, guard = '') => `
        ins AS (
          INSERT INTO ${S}.runs (id, workflow, key, holds_key, input, run_at, timeout_ms, parent_id, runs_after_id, trace,
            debounce_until)
          SELECT id, workflow, key, holds_key, input, coalesce(run_at, now()), timeout_ms, parent_id, runs_after_id, trace,
            debounce_until
          FROM ${source} ${guard}
          ${keyed ? ON_KEY_CONFLICT : ''}
          RETURNING id, run_at
        ), note AS MATERIALIZED (
          SELECT pg_notify($2, '') FROM ins WHERE $2 <> '' AND run_at <= now() LIMIT 1
        )`;
    this.sql = {
      insert: `
        WITH ${insertAndNotify(true)}
        SELECT ins.id FROM ins LEFT JOIN note ON true`,
      // nothing to conflict on: every run is inserted (or the statement fails), so no ids come back
      insertUnkeyed: `
        WITH ${insertAndNotify(false)}
        SELECT count(*)::int AS n FROM ins LEFT JOIN note ON true`,
      // A keyed start whose holder's status is one the policy settles (v.ok: useExisting, v.reject:
      // KeyTakenError; status bit masks, see STATUS_BITS) is answered from the statement's snapshot,
      // with no insert attempted and no lock on the holder: it writes only its `key_duplicate`
      // record (from which RunInfo.readds is counted), so concurrent duplicates of one key never
      // queue on the holder row. A holder in another status (or a row of the same key earlier in $1)
      // makes the insert conflict. Only the starts not inserted come back (a batch of fresh keys
      // returns nothing): with the holder when answered, else without. With $3, a statement that
      // inserted nothing commits with synchronous_commit off (option `activityCommit`).
      insertOrAnswer: `
        WITH v AS MATERIALIZED (
          SELECT * FROM jsonb_to_recordset($1::jsonb) AS v(${INSERT_COLUMNS}, ok integer, reject integer)
        ), dup AS (
          SELECT v.id AS start_id, r.id, v.workflow, v.key, v.reject & r.bit <> 0 AS rejected,
            r.input IS DISTINCT FROM v.input AS input_changed, v.input
          FROM v CROSS JOIN LATERAL (
            -- one probe of the key index per start, whatever the planner guesses of $1's size
            SELECT r.id, r.status, r.input, 1 << (array_position(${STATUS_BITS_SQL}, r.status) - 1) AS bit
            FROM ${S}.runs r WHERE r.workflow = v.workflow AND r.key = v.key AND ${holdsKey('r')} LIMIT 1
          ) r
          WHERE (v.ok | v.reject) & r.bit <> 0
        ), ${insertAndNotify(true, 'v', 'WHERE NOT EXISTS (SELECT 1 FROM dup WHERE dup.start_id = v.id)')}, act AS (
          INSERT INTO ${S}.activity (kind, run_id, workflow, key, details)
          SELECT 'key_duplicate', dup.id, dup.workflow, dup.key, jsonb_build_object('workflow', dup.workflow, 'key', dup.key,
            'outcome', CASE WHEN dup.rejected THEN 'error' ELSE 'use_existing' END,
            'inputChanged', dup.input_changed, 'input', coalesce(dup.input, 'null'))
          FROM dup
        )
        -- relaxed: evaluated for its effect only; the count of note: a one-time filter that sends the
        -- wake-up even when every start was inserted and no row comes back
        SELECT v.id AS start_id, dup.id AS holder_id, dup.rejected,
          CASE WHEN $3::boolean AND dup.id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM ins)
            THEN set_config('synchronous_commit', 'off', true) END AS relaxed
        FROM v LEFT JOIN dup ON dup.start_id = v.id
        WHERE NOT EXISTS (SELECT 1 FROM ins WHERE ins.id = v.id) AND (SELECT count(*) FROM note) >= 0`,
      holder: `
        SELECT id, status, started_at IS NOT NULL AS picked_up, debounce_until IS NOT NULL AS debouncing, input
        FROM ${S}.runs r WHERE workflow = $1 AND key = $2 AND ${holdsKey('r')} FOR UPDATE`,
      upsertWaiter: `
        INSERT INTO ${S}.runs (id, workflow, key, holds_key, status, input, run_at, timeout_ms, runs_after_id, takes_key_after, trace)
        VALUES ($1, $2, $3, false, 'waiting', $4, 'infinity', $5, $6, $7, $8)
        ON CONFLICT (workflow, key) WHERE status = 'waiting' AND NOT holds_key AND takes_key_after IS NOT NULL
        DO UPDATE SET input = EXCLUDED.input, runs_after_id = EXCLUDED.runs_after_id, takes_key_after = EXCLUDED.takes_key_after,
          trace = EXCLUDED.trace
        RETURNING id`,
      repointWaiter: `
        UPDATE ${S}.runs SET runs_after_id = $3
        WHERE workflow = $1 AND key = $2 AND status = 'waiting' AND NOT holds_key AND takes_key_after IS NOT NULL`,
      replaceInput: `
        UPDATE ${S}.runs SET input = $2,
          run_at = CASE WHEN $3::integer IS NULL THEN run_at
                        ELSE least(now() + $3 * interval '1 millisecond', coalesce(debounce_until, 'infinity')) END
        WHERE id = $1 AND status = 'pending' AND started_at IS NULL RETURNING id`,
      dropKey: `UPDATE ${S}.runs SET holds_key = false WHERE id = $1 AND holds_key RETURNING id`,
      takeKey: `UPDATE ${S}.runs SET holds_key = true WHERE id = $1 AND NOT holds_key RETURNING id`,
      get: `SELECT ${runColumns(S, 'r')}, ARRAY(SELECT c.id FROM ${S}.runs c WHERE c.parent_id = $1 ORDER BY c.id) AS children FROM ${S}.runs r WHERE id = $1`,
      getForUpdate: `SELECT * FROM ${S}.runs WHERE id = $1 FOR UPDATE`,
      list: `
        SELECT ${runColumns(S, 'r')} FROM ${S}.runs r
        WHERE ($1::text IS NULL OR workflow = $1)
          AND ($2::text IS NULL OR key = $2)
          -- a key without a workflow: through runs_key, one workflow at a time
          AND ($2::text IS NULL OR $1::text IS NOT NULL OR workflow = ANY(${indexedWorkflows(`${S}.runs`, 'key')}))
          AND ($3::text[] IS NULL OR status = ANY($3))
          AND ($4::text IS NULL OR flow_id = $4)
          AND ($5::uuid IS NULL OR parent_id = $5)
          AND ($6::uuid IS NULL OR id < $6)
          AND ($8::text IS NULL OR (status = 'waiting' AND wait_kind = $8))
        ORDER BY id DESC LIMIT $7`,
      // w: waiting runs whose timer ended (sleep, wait timeout, workflow deadline) and released
      // compensating runs whose retry delay passed; p: due pending runs (index order). One statement.
      claim: `
        WITH w AS (
          SELECT id FROM ${S}.runs
          WHERE ((status = 'waiting' AND wake_at <= now()) OR (status = 'compensating' AND node_id IS NULL AND run_at <= now()))
            AND ($3::text[] IS NULL OR workflow = ANY($3))
          LIMIT $2 FOR UPDATE SKIP LOCKED
        ), p AS (
          SELECT id FROM ${S}.runs
          WHERE status = 'pending' AND run_at <= now() AND ($3::text[] IS NULL OR workflow = ANY($3))
          ORDER BY run_at LIMIT $2 FOR UPDATE SKIP LOCKED
        ), c AS (
          SELECT id, true AS woke FROM w UNION ALL SELECT id, false FROM p LIMIT $2
        )
        UPDATE ${S}.runs r SET status = CASE WHEN r.status = 'compensating' THEN 'compensating' ELSE 'running' END,
          node_id = $1, epoch = r.epoch + 1, attempt = r.attempt + 1,
          started_at = coalesce(r.started_at, now()),
          deadline_at = coalesce(r.deadline_at, r.run_at + r.timeout_ms * interval '1 millisecond'),
          wake_at = NULL, wait_kind = NULL, wait_name = NULL
        FROM c WHERE r.id = c.id
        RETURNING r.flow_id, r.flow_name, r.name, r.deps, r.id, r.workflow, r.key, r.input, r.context, r.step, r.attempt, r.epoch, r.deadline_at,
          r.parent_id, r.trace, r.created_at, r.run_at, r.status, r.comp_step, r.error,
          -- the step's recorded waits, for runs woken by their timer (others look them up if they wait again)
          CASE WHEN c.woke THEN (SELECT jsonb_object_agg(w.call, jsonb_build_object('kind', w.kind, 'name', w.name, 'until', w.until,
             'due', w.until IS NOT NULL AND w.until <= now(), 'children', w.children, 'timed_out', w.timed_out))
           FROM ${S}.waits w WHERE w.run_id = r.id AND w.step = r.step) END AS waits`,
      transition: `
        UPDATE ${S}.runs r SET
          status = CASE WHEN (v.status = 'waiting' AND (v.wait_kind || ':' || coalesce(v.wait_name, '')) = ANY(r.inbox)) THEN 'pending' ELSE v.status END,
          step = coalesce(v.step, r.step),
          attempt = coalesce(v.attempt, r.attempt),
          context = coalesce(v.context, r.context),
          result = CASE WHEN v.status = 'completed' THEN v.result ELSE r.result END,
          results = CASE WHEN v.results IS NULL THEN r.results ELSE r.results || v.results END,
          error = v.error,
          run_at = CASE WHEN (v.status = 'waiting' AND (v.wait_kind || ':' || coalesce(v.wait_name, '')) = ANY(r.inbox)) THEN now()
                        WHEN v.delay_ms IS NULL THEN r.run_at ELSE now() + v.delay_ms * interval '1 millisecond' END,
          node_id = CASE WHEN v.status IN ('pending', 'waiting') OR v.release THEN NULL ELSE r.node_id END,
          finished_at = CASE WHEN v.final THEN now() END,
          -- waits: a suspension whose event/input/children arrived while the step ran (inbox mark) goes
          -- back to pending at once; else the run waits, its timer capped by the workflow deadline
          wait_kind = CASE WHEN v.status = 'waiting' AND NOT (v.status = 'waiting' AND (v.wait_kind || ':' || coalesce(v.wait_name, '')) = ANY(r.inbox)) THEN v.wait_kind END,
          wait_name = CASE WHEN v.status = 'waiting' AND NOT (v.status = 'waiting' AND (v.wait_kind || ':' || coalesce(v.wait_name, '')) = ANY(r.inbox)) THEN v.wait_name END,
          wake_at = CASE WHEN v.status = 'waiting' AND NOT (v.status = 'waiting' AND (v.wait_kind || ':' || coalesce(v.wait_name, '')) = ANY(r.inbox)) THEN least(v.wake_at, r.deadline_at) END,
          inbox = CASE WHEN v.status = 'waiting' THEN array_remove(r.inbox, v.wait_kind || ':' || coalesce(v.wait_name, ''))
                       ELSE r.inbox END,
          comp_step = coalesce(v.comp_step, r.comp_step)
        FROM jsonb_to_recordset($1::jsonb) AS v(id uuid, epoch integer, status text, step integer, attempt integer,
          context jsonb, result jsonb, results jsonb, error jsonb, delay_ms integer, final boolean,
          wait_kind text, wait_name text, wake_at timestamptz, comp_step integer, release boolean)
        WHERE r.id = v.id AND r.epoch = v.epoch AND r.status IN ('running', 'compensating')
        RETURNING r.id,
          -- a key holder's final status: the key trigger may have handed its key over in this transaction
          CASE WHEN v.final AND r.holds_key THEN now()::text END AS tx_at,
          CASE WHEN v.final AND r.holds_key THEN (txid_current() % 4294967296)::text END AS tx_xid`,
      cancel: `
        UPDATE ${S}.runs SET status = 'cancelled', cancel_reason = $2, error = $3, finished_at = now()
        WHERE id = $1 AND status IN ('pending', 'running', 'waiting')
        RETURNING ${ENDED}`,
      retry: `
        UPDATE ${S}.runs SET status = 'pending', run_at = now(), attempt = 0, error = NULL, finished_at = NULL,
          deadline_at = NULL, node_id = NULL
        WHERE id = $1 AND status = 'failed' RETURNING id`,
      release: `
        UPDATE ${S}.runs SET status = CASE WHEN status = 'compensating' THEN 'compensating' ELSE 'pending' END,
          node_id = NULL, run_at = now()
        WHERE id = ANY($1::uuid[]) AND node_id = $2 AND status IN ('running', 'compensating')`,
      timeouts: `
        UPDATE ${S}.runs SET status = 'failed', finished_at = now(),
          error = jsonb_build_object('name', 'TimeoutError', 'code', 'timeout', 'message', 'the run timed out')
        WHERE status IN ('pending', 'waiting') AND timeout_ms IS NOT NULL AND coalesce(deps_left, 0) = 0
          AND coalesce(deadline_at, run_at + timeout_ms * interval '1 millisecond') < now()
          -- runs with completed steps to compensate are failed by a worker (which compensates them)
          AND NOT (step > 0 AND workflow = ANY($1::text[]))
        RETURNING ${ENDED}`,
      prune: `
        WITH d AS (
          DELETE FROM ${S}.runs WHERE id IN (
            SELECT id FROM ${S}.runs c WHERE finished_at < now() - $1 * interval '1 millisecond'
              -- a child is kept while its parent is going (the parent's step reads it when it runs again)
              AND (c.parent_id IS NULL OR NOT EXISTS (
                SELECT 1 FROM ${S}.runs p WHERE p.id = c.parent_id AND p.finished_at IS NULL))
            LIMIT $2)
          RETURNING 1
        ) SELECT count(*)::int AS n FROM d`,
      wake: `SELECT pg_notify($1, '')`,
      // the tables whose rows changed since their last ANALYZE (autovacuum's or anyone's) exceed a
      // tenth of the row count the planner believes (-1: never analyzed) — autovacuum's default threshold
      statsStale: `
        SELECT c.relname AS table
        FROM pg_class c LEFT JOIN pg_stat_all_tables s ON s.relid = c.oid
        WHERE c.oid = ANY(ARRAY(SELECT ('${S}.' || t)::regclass FROM unnest($2::text[]) t))
          AND coalesce(s.n_mod_since_analyze > greatest($1::float8, 0.1 * c.reltuples), false)
        ORDER BY c.relname = 'runs' DESC -- runs first: the claim's plan depends on it`,
      // SKIP_LOCKED: never waits behind a VACUUM or another node's ANALYZE of the table
      ...Object.fromEntries(ANALYZED_TABLES.map((t) => [`analyze_${t}`, `ANALYZE (SKIP_LOCKED) ${S}.${t}`])),
      backlog: `
        SELECT count(*)::int AS pending, coalesce(extract(epoch FROM now() - min(run_at)) * 1000, 0)::float8 AS lag_ms
        FROM ${S}.runs WHERE status = 'pending' AND run_at <= now()`,
    };
  }

  /** Inserts runs (keyed ones only if the key is free) and, with `notify`, wakes the workers; returns the ids inserted. */
  async insert(q: Queryable, runs: NewRun[], notify = true): Promise<Set<string>> {
    const params = [recordset(runs), notify ? this.channel : ''];
    if (!runs.some((r) => typeof r.key === 'string')) {
      await q.query(this.sql.insertUnkeyed, params, 'durable_insert_unkeyed');
      return new Set(runs.map((r) => r.id));
    }
    const rows = await q.query<{ id: string }>(this.sql.insert, params, 'durable_insert');
    return new Set(rows.map((r) => r.id));
  }

  /**
   * Starts in one statement: each run is inserted if it has no key or its key is free; else,
   * when the holder's status is one of its `settled.useExisting` or `settled.reject` (statuses
   * the key policy settles at once), its `key_duplicate` is recorded. Answers each start, in
   * order: `created`, the holder and whether it rejects the start, or undefined when neither
   * happened (the caller takes the locking path).
   * `relaxedCommit` (only for a statement that is its own transaction): a statement that inserted
   * nothing commits without waiting for the WAL flush.
   */
  async insertOrAnswer(
    q: Queryable,
    starts: StartRow[],
    opts: { notify: boolean; relaxedCommit: boolean },
  ): Promise<(StartAnswer | undefined)[]> {
    if (!starts.some((s) => s.run.key !== null)) {
      await this.insert(q, starts.map((s) => s.run), opts.notify);
      return starts.map(() => 'created');
    }
    const rows = await q.query<{ start_id: string; holder_id: string | null; rejected: boolean | null }>(
      this.sql.insertOrAnswer,
      [
        // in (workflow, key) order, so two statements inserting the same fresh keys take their
        // index locks in the same order and cannot deadlock (a stable sort: same-key starts keep theirs)
        recordset(
          [...starts]
            .sort((a, b) => compareKeys(a.run, b.run))
            .map((s) => ({ ...s.run, ok: statusBits(s.settled.useExisting), reject: statusBits(s.settled.reject) })),
        ),
        opts.notify ? this.channel : '',
        opts.relaxedCommit,
      ],
      'durable_insert_or_answer',
    );
    const byId = new Map(rows.map((r): [string, StartAnswer | undefined] => [r.start_id, r.holder_id ? { holderId: r.holder_id, rejected: r.rejected! } : undefined]));
    return starts.map((s) => (byId.has(s.run.id) ? byId.get(s.run.id) : 'created'));
  }

  /** The run holding (workflow, key), locked for the rest of the transaction. */
  async lockHolder(q: Queryable, workflow: string, key: string): Promise<HolderRow | undefined> {
    const [row] = await q.query<HolderRow>(this.sql.holder, [workflow, key]);
    return row;
  }

  /**
   * Leaves one run waiting behind `holderId` without the key (or gives the one already waiting the
   * newer input); it takes the key when the holder ends with one of `takesKeyAfter`. Returns its id.
   */
  async upsertWaiter(q: Queryable, run: NewRun, holderId: string, takesKeyAfter: RunStatus[]): Promise<string> {
    const [row] = await q.query<{ id: string }>(this.sql.upsertWaiter, [
      run.id,
      run.workflow,
      run.key,
      JSON.stringify(run.input),
      run.timeout_ms,
      holderId,
      takesKeyAfter,
      run.trace ? JSON.stringify(run.trace) : null,
    ]);
    return row.id;
  }

  /** Makes the run waiting behind (workflow, key) wait behind `holderId` instead. */
  async repointWaiter(q: Queryable, workflow: string, key: string, holderId: string): Promise<void> {
    await q.query(this.sql.repointWaiter, [workflow, key, holderId]);
  }

  /**
   * Gives a pending run that no worker has picked up the newer input (and, for a debounce, restarts
   * its wait, capped by its debounce limit); false when it was picked up meanwhile.
   */
  async replaceInput(q: Queryable, id: string, input: unknown, restartWaitMs: number | null): Promise<boolean> {
    return (await q.query(this.sql.replaceInput, [id, JSON.stringify(input), restartWaitMs])).length > 0;
  }

  /** Makes run `id` give up its key; false when it did not hold it. */
  async dropKey(q: Queryable, id: string): Promise<boolean> {
    return (await q.query(this.sql.dropKey, [id])).length > 0;
  }

  /** Makes run `id` hold its key again (caller made sure it is free). */
  async takeKey(q: Queryable, id: string): Promise<boolean> {
    return (await q.query(this.sql.takeKey, [id])).length > 0;
  }

  /** One run, or undefined. */
  async get(q: Queryable, id: string, forUpdate = false): Promise<RunRow | undefined> {
    const [row] = await q.query<RunRow>(forUpdate ? this.sql.getForUpdate : this.sql.get, [id]);
    return row;
  }

  /** Runs matching `f`, newest first, after `cursor` (a run id). */
  list(q: Queryable, f: RunFilter): Promise<RunRow[]> {
    return q.query<RunRow>(this.sql.list, [
      f.workflow ?? null,
      f.key ?? null,
      f.status ?? null,
      f.flowId ?? null,
      f.parentId ?? null,
      f.cursor ?? null,
      f.limit,
      f.waitingFor ?? null,
    ]);
  }

  /** Claims up to `limit` due runs for `nodeId` (SKIP LOCKED), bumping each one's lease epoch. */
  claim(q: Queryable, nodeId: string, limit: number, workflows: string[] | null): Promise<ClaimedRow[]> {
    return q.query<ClaimedRow>(this.sql.claim, [nodeId, limit, workflows], 'durable_claim');
  }

  /**
   * Applies many transitions in one statement: `owned`, the ids whose execution still owned them;
   * `tx`, set when one of them was a key holder that ended (its key may have been handed over).
   */
  async transition(q: Queryable, ts: Transition[]): Promise<{ owned: Set<string>; tx: TxMark | null }> {
    const rows = await q.query<{ id: string; tx_at: string | null; tx_xid: string | null }>(
      this.sql.transition,
      [JSON.stringify(ts)],
      'durable_transition',
    );
    const ended = rows.find((r) => r.tx_at !== null);
    return { owned: new Set(rows.map((r) => r.id)), tx: ended ? { at: ended.tx_at!, xid: ended.tx_xid! } : null };
  }

  /** Cancels a run that is still going; no ids when it had finished (or is compensating). */
  async cancel(q: Queryable, id: string, reason: string | null, error: unknown): Promise<EndedRuns> {
    return endedRuns(await q.query<EndedRow>(this.sql.cancel, [id, reason, JSON.stringify(error)]));
  }

  /** Puts a failed run back to pending at its failed step; false when it is not failed. */
  async retry(q: Queryable, id: string): Promise<boolean> {
    return (await q.query(this.sql.retry, [id])).length > 0;
  }

  /** Hands runs this node still runs back to pending (shutdown). */
  async release(q: Queryable, nodeId: string, ids: string[]): Promise<void> {
    await q.query(this.sql.release, [ids, nodeId]);
  }

  /** Fails pending or waiting runs whose workflow timeout passed. */
  async failTimedOut(q: Queryable, compensable: string[] = []): Promise<EndedRuns> {
    return endedRuns(await q.query<EndedRow>(this.sql.timeouts, [compensable]));
  }

  /** Deletes up to `batch` runs finished more than `olderThanMs` ago; returns how many. */
  async prune(q: Queryable, olderThanMs: number, batch: number): Promise<number> {
    const [row] = await q.query<{ n: number }>(this.sql.prune, [olderThanMs, batch]);
    return row.n;
  }

  /**
   * Analyzes `runs` and `activity`, each when more than a tenth of the rows the planner believes it
   * has (and at least `minChanged`) changed since its last ANALYZE: after a burst of starts the
   * statistics do not know about, each claim can read and sort every due run, and a key's activity
   * is read and sorted whole instead of read newest first from its index. Only `tables` are looked
   * at (default both); returns the tables analyzed.
   */
  async analyzeIfStale(q: Queryable, minChanged: number, tables: readonly AnalyzedTable[] = ANALYZED_TABLES): Promise<AnalyzedTable[]> {
    const stale = await q.query<{ table: AnalyzedTable }>(this.sql.statsStale, [minChanged, tables]);
    for (const { table } of stale) await q.query(this.sql[`analyze_${table}`]);
    return stale.map((r) => r.table);
  }

  /** Wakes the workers (outside any start's transaction). */
  async wake(q: Queryable): Promise<void> {
    await q.query(this.sql.wake, [this.channel]);
  }

  /** Due pending runs and how long the oldest has waited. */
  async backlog(q: Queryable): Promise<{ pending: number; lagMs: number }> {
    const [row] = await q.query<{ pending: number; lag_ms: number }>(this.sql.backlog);
    return { pending: row.pending, lagMs: row.lag_ms };
  }
}

/** A row of {@link ENDED}. */
interface EndedRow {
  id: string;
  holds_key: boolean;
  tx_at: string;
  tx_xid: string;
}

function endedRuns(rows: EndedRow[]): EndedRuns {
  const keyed = rows.find((r) => r.holds_key);
  return { ids: rows.map((r) => r.id), tx: keyed ? { at: keyed.tx_at, xid: keyed.tx_xid } : null };
}
