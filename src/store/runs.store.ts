import { RUN_STATUSES, type RunStatus } from '../domain/run-info';
import { WORKFLOW_TIMED_OUT } from '../domain/workflow-timeout';
import type { TxMark } from './activity.store';
import { sqlState, type Queryable } from './db';
import type { RunRow } from './run-row';
import { inClaimOrder, runsStatements } from './runs.sql';
import { ANALYZED_TABLES, runsMaintenanceStatements, type AnalyzedTable } from './runs.maintenance.sql';
import type { ClaimBy, ClaimedRow, EndedRuns, HolderRow, NewRun, RunFilter, StartAnswer, StartRow, TimedOutRuns, Transition } from './runs.types';
import { encodeTransitions } from './transition.fields';

/**
 * Whether Postgres refused a statement because the key already has a holder (a unique violation
 * of `runs_key`): what a statement that makes a run the holder without `ON CONFLICT` meets when
 * a start committed a holder of that key meanwhile.
 */
export function isKeyConflict(err: unknown): boolean {
  return sqlState(err) === '23505' && (err as { constraint?: unknown }).constraint === 'runs_key';
}

/**
 * `runs` as the JSON array a `jsonb_to_recordset` reads, without the top-level null fields (a
 * missing field reads as NULL, like a null one): less to send and to parse per row.
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

/** The bit mask of `statuses` over {@link RUN_STATUSES} (status i is bit i), computed once per (memoized) list. */
function statusBits(statuses: readonly RunStatus[]): number {
  let mask = MASKS.get(statuses);
  if (mask === undefined) {
    mask = 0;
    for (const st of statuses) mask |= 1 << RUN_STATUSES.indexOf(st);
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
    this.sql = { ...runsStatements(`"${schema}"`), ...runsMaintenanceStatements(`"${schema}"`) };
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
   * Inserts one run due now, claimed at once by node `nodeId` when that node may claim it (see
   * `insertClaimed`): the run as a claim returns it; `queued`, it went to the queue (the workers
   * woken with `notify`); `held`, its key is held and nothing was written.
   */
  async insertClaimed(q: Queryable, run: NewRun, by: ClaimBy & { notify: boolean }): Promise<ClaimedRow | 'queued' | 'held'> {
    const keyed = run.key !== null;
    const [row] = await q.query<ClaimedRow>(
      keyed ? this.sql.insertClaimedKeyed : this.sql.insertClaimed,
      [recordset([run]), by.notify ? this.channel : '', by.nodeId, by.nodeTimeoutMs, by.seq],
      keyed ? 'durable_insert_claimed_keyed' : 'durable_insert_claimed',
    );
    if (!row) return 'held';
    return row.status === 'running' ? row : 'queued';
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
  async insertOrAnswer(q: Queryable, starts: StartRow[], opts: { notify: boolean; relaxedCommit: boolean }): Promise<(StartAnswer | undefined)[]> {
    if (!starts.some((s) => s.run.key !== null)) {
      await this.insert(
        q,
        starts.map((s) => s.run),
        opts.notify,
      );
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
    const byId = new Map(
      rows.map((r): [string, StartAnswer | undefined] => [r.start_id, r.holder_id ? { holderId: r.holder_id, rejected: r.rejected! } : undefined]),
    );
    return starts.map((s) => (byId.has(s.run.id) ? byId.get(s.run.id) : 'created'));
  }

  /** The run holding (workflow, key), locked for the rest of the transaction. */
  async lockHolder(q: Queryable, workflow: string, key: string): Promise<HolderRow | undefined> {
    const [row] = await q.query<HolderRow>(this.sql.holder, [workflow, key]);
    return row;
  }

  /** The run holding (workflow, key), read without a lock, with the id of the run waiting behind it. */
  async peekHolder(q: Queryable, workflow: string, key: string): Promise<(HolderRow & { waiter_id: string | null }) | undefined> {
    const [row] = await q.query<HolderRow & { waiter_id: string | null }>(this.sql.peekHolder, [workflow, key]);
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
      run.priority ?? 0,
      run.group_key ?? null,
    ]);
    return row.id;
  }

  /** Makes the run waiting behind (workflow, key) wait behind `holderId` instead. */
  async repointWaiter(q: Queryable, workflow: string, key: string, holderId: string): Promise<void> {
    await q.query(this.sql.repointWaiter, [workflow, key, holderId]);
  }

  /**
   * Gives a run that no worker has picked up the newer input, its group and its start's priority (and, for a
   * debounce, restarts its wait, capped by its debounce limit); false when it was picked up meanwhile.
   */
  async replaceInput(q: Queryable, id: string, input: unknown, group: string | null, restartWaitMs: number | null, priority: number): Promise<boolean> {
    return (await q.query(this.sql.replaceInput, [id, JSON.stringify(input), restartWaitMs, group, priority])).length > 0;
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

  /**
   * One run's row alone, or undefined: without its child ids or the re-adds still in the activity
   * log (`children` and `readds_logged` unset), so that acting on a run of many children reads one row.
   */
  async getRow(q: Queryable, id: string): Promise<RunRow | undefined> {
    const [row] = await q.query<RunRow>(this.sql.getRow, [id]);
    return row;
  }

  /** Run `id`'s status alone (what a wait for it polls), or undefined when there is no such run. */
  async status(q: Queryable, id: string): Promise<RunStatus | undefined> {
    const [row] = await q.query<{ status: RunStatus }>(this.sql.status, [id]);
    return row?.status;
  }

  /**
   * Runs matching `f`, newest first: older than `before` (a run id), or the `limit` runs just newer
   * than `after`.
   */
  async list(q: Queryable, f: RunFilter): Promise<RunRow[]> {
    const up = f.after !== undefined && f.before === undefined;
    const text = f.key === undefined ? (up ? this.sql.listAfter : this.sql.list) : up ? this.sql.listKeyAfter : this.sql.listKey;
    const rows = await q.query<RunRow>(text, [...filterParams(f), f.limit, f.after ?? null]);
    return up ? rows.reverse() : rows;
  }

  /** How many runs match `f`, counting at most `cap`. */
  async count(q: Queryable, f: Omit<RunFilter, 'limit'>, cap: number): Promise<number> {
    const [row] = await q.query<{ n: number }>(this.sql.count, [...filterParams(f), cap]);
    return row.n;
  }

  /** Runs of each of `workflows` in each status, each figure at most `cap`. */
  countByStatus(q: Queryable, workflows: string[], cap: number) {
    return q.query<{ workflow: string; status: RunStatus; n: number }>(this.sql.countByStatus, [workflows, cap]);
  }

  /**
   * Claims up to `limit` due runs for `nodeId` (SKIP LOCKED), bumping each one's lease epoch; in the
   * order they should begin (see `inClaimOrder`).
   */
  async claim(q: Queryable, by: ClaimBy, limit: number, workflows: string[]): Promise<ClaimedRow[]> {
    return inClaimOrder(await q.query<ClaimedRow>(this.sql.claim, [by.nodeId, limit, workflows, by.nodeTimeoutMs, by.seq], 'durable_claim'));
  }

  /**
   * Applies many transitions of node `nodeId` in one statement (with the step attempts they end);
   * `notApplied`, those of `ts` whose execution no longer owned its run (nothing written for them);
   * `tx`, set when the triggers may have acted in the statement's transaction: a key holder ended
   * (its key may have been handed over), or a parent or flow node ended otherwise than completed
   * (its children or dependants may have been cancelled; see `ActivityStore.triggerOutcomes`).
   */
  async transition(q: Queryable, ts: Transition[], nodeId: string): Promise<{ notApplied: Set<Transition>; tx: TxMark | null }> {
    const rows = await q.query<{ id: string | null; epoch: number | null; tx_at: string | null; tx_xid: string | null }>(
      this.sql.transition,
      [encodeTransitions(ts), nodeId],
      'durable_transition',
    );
    // rows are the few transitions not applied (usually none), and the tx mark
    const notApplied = new Set(ts.filter((t) => rows.some((r) => r.id === t.id && r.epoch === t.epoch)));
    const ended = rows.find((r) => r.tx_at !== null);
    return { notApplied, tx: ended ? { at: ended.tx_at!, xid: ended.tx_xid! } : null };
  }

  /** Cancels a run that is still going; no ids when it had finished (or is compensating). */
  async cancel(q: Queryable, id: string, reason: string | null, error: unknown): Promise<EndedRuns> {
    return endedRuns(await q.query<EndedRow>(this.sql.cancel, [id, reason, JSON.stringify(error)]));
  }

  /** Puts a failed run back to pending at its failed step and wakes the workers; false when it is not failed. */
  async retry(q: Queryable, id: string): Promise<boolean> {
    return (await q.query(this.sql.retry, [id, this.channel])).length > 0;
  }

  /** Hands runs this node still runs back to pending (shutdown). */
  async release(q: Queryable, nodeId: string, runs: { id: string; epoch: number }[]): Promise<void> {
    await q.query(this.sql.release, [runs.map((r) => r.id), nodeId, runs.map((r) => r.epoch)]);
  }

  /**
   * Fails pending or waiting runs whose workflow timeout passed (at most `batch` of each kind: claimed
   * before, never claimed): every run still at its first step, and runs past it of
   * `withoutCompensation` (workflows known to have no compensations). Runs past it of `compensable`
   * (by workflow, for each step a run may be at, the index of the step whose compensation runs
   * first, -1 for none) become compensating without a node (or fail, for -1); runs of other
   * workflows are failed, and compensated, by a worker, and are not read here. Each gets the error a
   * worker gives a run past its deadline ({@link WORKFLOW_TIMED_OUT}, with its step's name from
   * `stepNames`, by workflow).
   */
  async failTimedOut(
    q: Queryable,
    withoutCompensation: string[],
    batch: number,
    compensable: Record<string, number[]> = {},
    stepNames: Record<string, string[]> = {},
  ): Promise<TimedOutRuns> {
    const rows = await q.query<EndedRow & { status: string }>(this.sql.timeouts, [
      withoutCompensation,
      batch,
      JSON.stringify(compensable),
      JSON.stringify(stepNames),
      WORKFLOW_TIMED_OUT,
    ]);
    const { runs, tx } = endedRuns(rows);
    const compensating = new Set(rows.filter((r) => r.status === 'compensating').map((r) => r.id));
    return { runs: runs.filter((r) => !compensating.has(r.id)), compensating: runs.filter((r) => compensating.has(r.id)), tx };
  }

  /**
   * Prunes up to `batch` runs finished more than `olderThanMs` ago that are not key tombstones,
   * oldest first: those that still hold a key their workflow's `reuse` keeps, and finished within
   * the key horizon, become tombstones (their payloads and history are deleted, the row and so the
   * key stay), the others are deleted. Returns how many.
   */
  async prune(q: Queryable, olderThanMs: number, batch: number, keys: KeyHorizon = NO_KEY_HORIZON): Promise<number> {
    const [row] = await q.query<{ n: number }>(this.sql.prune, [olderThanMs, batch, ...keyParams(keys)]);
    return row.n;
  }

  /**
   * Deletes up to `batch` key tombstones finished more than `olderThanMs` ago whose key was released
   * or whose horizon (`keysMs`, 0: none) passed. Returns how many.
   */
  async pruneTombstones(q: Queryable, olderThanMs: number, batch: number, keysMs = 0): Promise<number> {
    const [row] = await q.query<{ n: number }>(this.sql.pruneTombstones, [olderThanMs, batch, keysMs]);
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

  /**
   * Due pending runs, a paused workflow's left out, and how long the oldest has waited: since its
   * `run_at`, or since its workflow was last resumed if later (held by a pause, it could not be
   * claimed before). Two unnamed
   * statements, so that the second is planned for the workflows it reads: a long pause's held runs
   * are not read at all.
   */
  async backlog(q: Queryable): Promise<{ pending: number; lagMs: number }> {
    const [{ workflows }] = await q.query<{ workflows: string[] }>(this.sql.backlogWorkflows);
    const [row] = await q.query<{ pending: number; lag_ms: number }>(this.sql.backlog, [workflows]);
    return { pending: row.pending, lagMs: row.lag_ms };
  }
}

/** `retention.keys`: how long after it finished a holder keeps its key, and for which (workflow, status). */
export interface KeyHorizon {
  ms: number;
  /** The (workflow, final status) pairs whose holder keeps its key (its `reuse` does not free it). */
  keeps: { workflow: string; status: RunStatus }[];
}

/** No key horizon: pruning deletes holders like any run. */
const NO_KEY_HORIZON: KeyHorizon = { ms: 0, keeps: [] };

const keyParams = (k: KeyHorizon) => [k.ms, k.keeps.map((p) => p.workflow), k.keeps.map((p) => p.status)];

/** A row of {@link ENDED}. */
interface EndedRow {
  id: string;
  workflow: string;
  step: number;
  marks: boolean;
  tx_at: string;
  tx_xid: string;
}

function endedRuns(rows: EndedRow[]): EndedRuns {
  const marked = rows.find((r) => r.marks);
  return {
    runs: rows.map((r) => ({ id: r.id, workflow: r.workflow, step: r.step })),
    tx: marked ? { at: marked.tx_at, xid: marked.tx_xid } : null,
  };
}

/** The parameters $1–$7 of the run filters (see `RUN_FILTERS` in runs.sql.ts). */
function filterParams(f: Omit<RunFilter, 'limit'>): unknown[] {
  return [f.workflow ?? null, f.key ?? null, f.status ?? null, f.flowId ?? null, f.parentId ?? null, f.waitingFor ?? null, f.before ?? null];
}
