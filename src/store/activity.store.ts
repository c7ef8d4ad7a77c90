import type { Queryable } from './db';
import { CANCELLED_BY_FLOW, distinctValues, givenOrIndexedWorkflows, holdsKey } from './sql';

/** Kinds of activity event the module records. */
export type ActivityKind = 'key_duplicate' | 'key_handed_off' | 'key_released' | 'key_retaken' | 'dashboard_action';

/** A transaction as the rows it wrote carry it: its start time (`now()`, as text) and its id (their `xmin`). */
export interface TxMark {
  at: string;
  xid: string;
}

/** An `activity` row. */
export interface ActivityRow {
  id: string;
  kind: string;
  run_id: string | null;
  at: Date;
  details: Record<string, unknown>;
}

/** A key as `ActivityStore.keys` reads it (`workflow` and `last_id`, its newest run: across workflows only). */
export interface KeyRow {
  workflow?: string;
  key: string;
  last_id?: string;
  runs: number;
  holder_id: string | null;
  holder_status: string | null;
  readds_last_day: number;
}

/** A page of keys, and the cursor of the next one (null: no more). */
export interface KeyPage {
  rows: KeyRow[];
  next: string | null;
}

/** The holder of key `k` of workflow `w` (SQL expressions), as a subquery with `id` and `status`. */
const HOLDER = (S: string, w: string, k: string): string =>
  `SELECT r.id, r.status FROM ${S}.runs r WHERE r.workflow = ${w} AND r.key = ${k} AND ${holdsKey('r')} LIMIT 1`;

/** The select list of a key's figures: its holder (`h`), its runs, its re-adds of the last day. */
const KEY_FIGURES = (S: string, w: string, k: string): string => `h.id AS holder_id, h.status AS holder_status,
          (SELECT count(*) FROM ${S}.runs r WHERE r.workflow = ${w} AND r.key = ${k})::int AS runs,
          (SELECT count(*) FROM ${S}.activity a
            WHERE a.workflow = ${w} AND a.key = ${k} AND a.kind = 'key_duplicate' AND a.at > now() - interval '1 day')::int AS readds_last_day`;

/** The figures of each key of CTE `page` (its keys of workflow $1), in key order. */
const KEYS_PAGE = (S: string): string => `SELECT p.key, ${KEY_FIGURES(S, '$1', 'p.key')}
        FROM page p LEFT JOIN LATERAL (${HOLDER(S, '$1', 'p.key')}) h ON true
        ORDER BY p.key`;

/** The `kind` events of workflow $1, as the `FROM … WHERE` of a read of `activity_key_stats` alone. */
const KEY_EVENTS = (S: string, kind: 'key_duplicate' | 'key_handed_off'): string => `${S}.activity WHERE workflow = $1 AND kind = '${kind}'`;

/** How many of the newest keyed runs a page of keys across workflows reads, per key asked for. */
const KEYS_WINDOW = 20;
/** How many of the newest keyed runs (older than the cursor) a search of keys across workflows looks through. */
const SEARCH_WINDOW = 20_000;
/** Most windows one page of keys across workflows looks through (see `ActivityStore.keys`). */
const KEYS_WINDOWS_A_PAGE = 10;

/** How many runs the window of a page of keys across workflows reads (see {@link KEYS_ALL_WINDOW}). */
const WINDOW_RUNS = `CASE WHEN $2::text IS NULL THEN $4 * ${KEYS_WINDOW} ELSE ${SEARCH_WINDOW} END`;

/**
 * The window of a page of keys across workflows: the newest keyed runs older than the run $3 ($4
 * keys asked for; with a search $2, the newest SEARCH_WINDOW of them), as `w`; then `m`, the newest
 * of them matching the search, at most $4 × KEYS_WINDOW.
 */
const KEYS_ALL_WINDOW = (S: string): string => `
          w AS (
            SELECT workflow, key, id FROM ${S}.runs WHERE key IS NOT NULL AND ($3::uuid IS NULL OR id < $3)
            ORDER BY id DESC LIMIT ${WINDOW_RUNS}
          ), m AS (
            SELECT workflow, key, id FROM w WHERE $2::text IS NULL OR strpos(key, $2) > 0 ORDER BY id DESC LIMIT $4 * ${KEYS_WINDOW}
          )`;

/** Filters of `listActivity`. */
export interface ActivityFilter {
  kinds?: string[];
  workflow?: string;
  key?: string;
  runId?: string;
  since?: Date;
  /** Only events older than this one (its id), in the log's order. */
  cursor?: string;
  limit: number;
}

/**
 * The filters of `listActivity` other than workflow and key, on alias `a` ($1 kinds, $4 run, $5
 * since, $7 an event the events are older than, in the log's order) of the table `T`.
 */
const otherFilters = (a: string, T: string): string =>
  `($1::text[] IS NULL OR ${a}.kind = ANY($1)) AND ($4::uuid IS NULL OR ${a}.run_id = $4) AND ($5::timestamptz IS NULL OR ${a}.at >= $5)
   AND ($7::bigint IS NULL OR (${a}.at, ${a}.id) < (SELECT c.at, c.id FROM ${T} c WHERE c.id = $7))`;

/** `n` runs of `workflow`. */
export interface WorkflowCount {
  workflow: string;
  n: number;
}

/** Statements on the `activity` log and the key statistics read from it. */
export class ActivityStore {
  private readonly sql: Record<string, string>;

  constructor(schema: string) {
    const S = `"${schema}"`;
    this.sql = {
      record: `INSERT INTO ${S}.activity (kind, run_id, workflow, key, details) VALUES ($1, $2, $3, $4, $5)`,
      // what the triggers did in one transaction (its rows: same start time, index activity_at or
      // runs_finished_live, and xmin): the key trigger's runAgain hand-offs (activity rows), and the runs
      // the triggers cancelled (finished_at is the transaction's now()): a run waiting behind a key
      // its holder kept (key_taken), a child of a parent that ended (durable_cancel_children: parentId),
      // a flow node whose dependency did not complete (durable_flow_resolve: its reason); counted by
      // workflow, so that a parent cancelled with 100,000 children returns a row, not 100,000
      triggerOutcomes: `
        SELECT workflow, handed_off, count(*)::int AS n FROM (
          SELECT workflow, true AS handed_off FROM ${S}.activity
          WHERE at = $1::timestamptz AND xmin = $2::xid AND kind = 'key_handed_off' AND details->>'via' = 'runAgain'
          UNION ALL
          SELECT workflow, false FROM ${S}.runs
          WHERE finished_at = $1::timestamptz AND finished_at IS NOT NULL AND pruned_at IS NULL AND xmin = $2::xid AND status = 'cancelled'
            AND (error->>'code' = 'key_taken' OR error ? 'parentId' OR ${CANCELLED_BY_FLOW})
        ) x GROUP BY workflow, handed_off`,
      // events without a key filter ($3, the key, is null: it only keeps the parameter list of
      // listByKey), by the log's own order (activity_at, or the filters' indexes)
      list: `
        SELECT a.id::text, a.kind, a.run_id, a.at, a.details FROM ${S}.activity a
        WHERE $3::text IS NULL AND ($2::text IS NULL OR workflow = $2) AND ${otherFilters('a', `${S}.activity`)}
        -- newest first: by time, then a.id (the number; the output column id is its text)
        ORDER BY a.at DESC, a.id DESC LIMIT $6`,
      // a key's events: its newest of each workflow (of $2, or of every workflow) read from
      // activity_key (workflow, key, at) newest first, then the newest of those. The key is a
      // range, not an equality, and leads the order, so the planner cannot take it for a constant
      // and walk activity_at newest first instead, filtering every newer row (measured in bench/keys.js)
      listByKey: `
        SELECT a.id::text, a.kind, a.run_id, a.at, a.details
        FROM unnest(${givenOrIndexedWorkflows('$2', `${S}.activity`, 'workflow')}) w (workflow)
        CROSS JOIN LATERAL (
          SELECT * FROM ${S}.activity a
          WHERE a.workflow = w.workflow AND a.key >= $3 AND a.key <= $3 AND ${otherFilters('a', `${S}.activity`)}
          ORDER BY a.key DESC, a.at DESC, a.id DESC LIMIT $6
        ) a
        ORDER BY a.at DESC, a.id DESC LIMIT $6`,
      // a page of the workflow's keys in key order after $2, one descent of runs_key per key (a
      // key's runs are not read to reach the next key; the recursion stops after $3 keys), then
      // each key's holder, runs and re-adds of the last day
      keys: `
        WITH page AS (
          SELECT unnest(${distinctValues(`${S}.runs`, 'key', (a) => `${a}.workflow = $1 AND ${a}.key IS NOT NULL`, { after: '$2::text', limit: '$3' })}) AS key
        )
        ${KEYS_PAGE(S)}`,
      // the same with a substring $2 to look for: the workflow's keyed runs read from runs_key in
      // key order until $4 keys match
      keysSearch: `
        WITH page AS (
          SELECT DISTINCT r.key FROM ${S}.runs r
          WHERE r.workflow = $1 AND r.key IS NOT NULL AND strpos(r.key, $2) > 0 AND ($3::text IS NULL OR r.key > $3)
          ORDER BY r.key LIMIT $4
        )
        ${KEYS_PAGE(S)}`,
      // keys of every workflow, newest first (by their newest run): the keys of the newest keyed
      // runs older than the run $3 (a bounded window of the primary key, read backwards; with a
      // search $2, the matches among the newest SEARCH_WINDOW), without the keys that have a run
      // from $3 on (shown on an earlier page). Each row also says where the window ends (edge: the
      // oldest run it took, of the matches when they filled it) and whether older keyed runs may
      // remain (more); a window without a key gives one row of these alone (key null). w is read
      // to its end only when the matches did not fill m (the subqueries of w run when needed)
      keysAll: `
        WITH ${KEYS_ALL_WINDOW(S)}, page AS (
          SELECT x.workflow, x.key, x.last_id FROM (
            SELECT workflow, key, max(id::text)::uuid AS last_id FROM m GROUP BY workflow, key
          ) x
          WHERE $1::text IS NULL AND ($3::uuid IS NULL OR NOT EXISTS (
            SELECT 1 FROM ${S}.runs n WHERE n.workflow = x.workflow AND n.key = x.key AND n.id >= $3))
          ORDER BY x.last_id DESC LIMIT $4
        ), m_seen AS (
          SELECT count(*) = $4 * ${KEYS_WINDOW} AS full, min(id::text) AS oldest FROM m
        )
        SELECT CASE WHEN e.full THEN e.oldest ELSE (SELECT min(id::text) FROM w) END AS edge,
          e.full OR (SELECT count(*) FROM w) = ${WINDOW_RUNS} AS more,
          p.workflow, p.key, p.last_id, ${KEY_FIGURES(S, 'p.workflow', 'p.key')}
        FROM m_seen e LEFT JOIN page p ON true LEFT JOIN LATERAL (${HOLDER(S, 'p.workflow', 'p.key')}) h ON true
        ORDER BY p.last_id DESC`,
      // every figure from an index alone: the holders from runs_key_holders, the key events from
      // activity_key_stats (outcome and input_changed are columns computed from details, migration
      // DurableKeyStats1733040018000): the duplicates counted once per outcome and hour of the last
      // day (o, older ones in hour null), from which three figures are summed, and once per key in
      // the index's key order
      stats: `
        WITH o AS (
          SELECT outcome, CASE WHEN at > now() - interval '1 day' THEN date_trunc('hour', at) END AS b,
            count(*)::int AS n, count(*) FILTER (WHERE input_changed)::int AS changed
          FROM ${KEY_EVENTS(S, 'key_duplicate')} GROUP BY 1, 2
        )
        SELECT
          (SELECT count(*) FROM ${S}.runs r WHERE workflow = $1 AND key IS NOT NULL AND ${holdsKey('r')})::int AS keys_held,
          (SELECT coalesce(jsonb_object_agg(outcome, n), '{}') FROM (SELECT outcome, sum(n)::int AS n FROM o GROUP BY 1) x) AS by_outcome,
          (SELECT coalesce(sum(changed), 0) FROM o WHERE outcome = 'useExisting')::int AS dropped,
          (SELECT count(*) FROM ${KEY_EVENTS(S, 'key_handed_off')})::int AS handoffs,
          (SELECT coalesce(jsonb_agg(jsonb_build_object('bucket', b, 'count', n) ORDER BY b), '[]') FROM (
             SELECT b, sum(n)::int AS n FROM o WHERE b IS NOT NULL GROUP BY 1) t) AS over_time,
          (SELECT coalesce(jsonb_agg(jsonb_build_object('key', key, 'readds', n) ORDER BY n DESC, key), '[]') FROM (
             SELECT key, count(*)::int AS n FROM ${KEY_EVENTS(S, 'key_duplicate')} GROUP BY key ORDER BY n DESC, key LIMIT 10) k) AS top_keys`,
      // a pruned `key_duplicate` still counts in its run's RunInfo.readds: folded into runs.readds
      prune: `
        WITH d AS (
          DELETE FROM ${S}.activity WHERE id IN (
            SELECT id FROM ${S}.activity WHERE at < now() - $1 * interval '1 millisecond' LIMIT $2)
          RETURNING run_id, kind
        ), folded AS (
          UPDATE ${S}.runs r SET readds = r.readds + c.n
          FROM (SELECT run_id, count(*)::int AS n FROM d WHERE kind = 'key_duplicate' GROUP BY run_id) c
          WHERE r.id = c.run_id
        ) SELECT count(*)::int AS n FROM d`,
    };
  }

  /** Appends one event (in the caller's transaction when `q` is one). */
  async record(q: Queryable, kind: ActivityKind, runId: string | null, workflow: string | null, key: string | null, details: object): Promise<void> {
    await q.query(this.sql.record, [kind, runId, workflow, key, JSON.stringify({ workflow, key, ...details })]);
  }

  /**
   * What the triggers did in transaction `tx`: the workflow of each runAgain hand-off the key trigger
   * (`runs_key_handoff`) logged, and of each run they cancelled along with another run's end: a run
   * waiting behind a key its holder kept, the unfinished children of a parent that was cancelled,
   * failed or compensated (`runs_cancel_children`), the flow nodes whose dependency did not complete
   * (`durable_flow_resolve`). In that transaction (before it ends) or after it committed. Read as
   * a count per workflow (a row per workflow, however many runs): `n` runs of `workflow` each.
   */
  async triggerOutcomes(q: Queryable, tx: TxMark): Promise<{ handedOff: WorkflowCount[]; cancelled: WorkflowCount[] }> {
    const rows = await q.query<WorkflowCount & { handed_off: boolean }>(this.sql.triggerOutcomes, [tx.at, tx.xid]);
    const of = (handedOff: boolean) => rows.filter((r) => r.handed_off === handedOff).map(({ workflow, n }) => ({ workflow, n }));
    return { handedOff: of(true), cancelled: of(false) };
  }

  /** Events matching `f`, newest first. */
  list(q: Queryable, f: ActivityFilter): Promise<ActivityRow[]> {
    const text = f.key === undefined ? this.sql.list : this.sql.listByKey;
    return q.query<ActivityRow>(text, [f.kinds ?? null, f.workflow ?? null, f.key ?? null, f.runId ?? null, f.since ?? null, f.limit, f.cursor ?? null]);
  }

  /**
   * Keys (substring `search`): of `workflow` ordered by key, after `cursor` (a key); or, with
   * `workflow` null, of every workflow, newest first, older than `cursor` (a run id: `last_id`).
   * Across workflows a page reads a window of the newest keyed runs; a window that holds fewer keys
   * than asked for (a key of many runs fills it) has them all in the page, which goes on from the
   * window's oldest run, at most {@link KEYS_WINDOWS_A_PAGE} windows. A page that stops there short
   * of `limit` ends on a key whose `last_id` is where the next page goes on from; `next` is that
   * cursor even when the windows held no key at all.
   */
  async keys(q: Queryable, workflow: string | null, search: string | null, cursor: string | null, limit: number): Promise<KeyPage> {
    if (workflow !== null) {
      const rows =
        search === null
          ? await q.query<KeyRow>(this.sql.keys, [workflow, cursor, limit])
          : await q.query<KeyRow>(this.sql.keysSearch, [workflow, search, cursor, limit]);
      return { rows, next: rows.length === limit ? rows[rows.length - 1].key : null };
    }
    const rows: KeyRow[] = [];
    let from = cursor;
    for (let window = 1; ; window++) {
      const got = await q.query<KeyRow & { edge: string | null; more: boolean }>(this.sql.keysAll, [null, search, from, limit - rows.length]);
      for (const { edge, more, ...row } of got) if (row.key !== null) rows.push(row);
      if (rows.length >= limit) return { rows, next: rows[rows.length - 1].last_id! };
      const { edge, more } = got[0];
      if (!more || edge === null) return { rows, next: null };
      from = edge;
      if (window === KEYS_WINDOWS_A_PAGE) {
        if (rows.length > 0) rows[rows.length - 1] = { ...rows[rows.length - 1], last_id: from };
        return { rows, next: from };
      }
    }
  }

  /** The key statistics of `workflow`, over the activity kept. */
  async stats(q: Queryable, workflow: string) {
    const [row] = await q.query<{
      keys_held: number;
      by_outcome: Record<string, number>;
      dropped: number;
      handoffs: number;
      over_time: { bucket: string; count: number }[];
      top_keys: { key: string; readds: number }[];
    }>(this.sql.stats, [workflow]);
    return row;
  }

  /** Deletes up to `batch` events older than `olderThanMs`; returns how many. */
  async prune(q: Queryable, olderThanMs: number, batch: number): Promise<number> {
    const [row] = await q.query<{ n: number }>(this.sql.prune, [olderThanMs, batch]);
    return row.n;
  }
}
