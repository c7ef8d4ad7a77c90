import { RUN_STATUSES, type RunStatus } from '../domain/run-info';
import { runColumns } from './run-row';
import type { ClaimedRow } from './runs.types';
import {
  distinctWorkflows,
  givenOrIndexedWorkflows,
  holdsKey,
  indexedWorkflows,
  lastAttemptFields,
  nodeMayClaim,
  notPaused,
  runDeadline,
  statusLiterals,
} from './sql';
import { CLAIMED_COLUMNS, DEBOUNCE_UNTIL, INSERT_COLUMNS, insertClaimed, RUN_AT } from './runs.insert.sql';
import { transitionFields } from './transition.fields';

/**
 * RETURNING list of a statement that ends runs, read by {@link endedRuns}: `marks`, the run's end
 * may have made the triggers act in the same transaction (a key holder's key, a parent's children,
 * a flow node's dependants); the transaction's mark is the row's `xmin`, which is also the rows
 * those triggers write (in a savepoint: the subtransaction's id, not `txid_current()`).
 */
export const ENDED = `id, workflow, step, holds_key OR has_children OR flow_id IS NOT NULL AS marks,
        now()::text AS tx_at, xmin::text AS tx_xid`;
/**
 * A transition of `v` on run `r` after which the triggers may have ended other runs (or handed a
 * key over) in its transaction: a key holder's end; a parent's end other than completed, or its move
 * to compensating (its unfinished children are cancelled); a flow node's end other than completed
 * (dependants it fails are cancelled). A one-step run without key, children or flow is none.
 */
const TRIGGERS_ACT = `(v.final AND r.holds_key) OR (r.has_children AND v.status <> 'completed' AND (v.final OR v.status = 'compensating'))
          OR (v.final AND r.flow_id IS NOT NULL AND v.status <> 'completed')`;
/** The columns of a key's holder as the key policy sees it (`HolderRow`). */
const HOLDER = `id, status, started_at IS NOT NULL AS picked_up, debounce_until IS NOT NULL AS debouncing, input`;
/** The insert's arbiter: the unique `runs_key` index (a second holder of a key conflicts). */
const ON_KEY_CONFLICT = 'ON CONFLICT (workflow, key, (holds_key OR NULL)) WHERE key IS NOT NULL DO NOTHING';

/** `statuses` (the module's own constants) as a text[] literal. */
const statusArray = (statuses: readonly RunStatus[]): string => `ARRAY[${statusLiterals(statuses)}]::text[]`;
/** Every status in {@link RUN_STATUSES}' order: status i is bit i of the masks `insertOrAnswer` sends per start. */
const STATUS_BITS_SQL = statusArray(RUN_STATUSES);

/**
 * The statuses in groups, each read through its own partial index: pending (runs_pending), running
 * (runs_running) and the others (runs_workflow_status_other, by workflow, status and id). `where`
 * is the group's condition on an alias, written as the index's predicate; `byWorkflow`, the index
 * leads with `workflow`.
 */
const STATUS_GROUPS: { where: (alias: string) => string; statuses: readonly RunStatus[]; byWorkflow: boolean }[] = [
  { where: (a) => `${a}.status = 'pending'`, statuses: ['pending'], byWorkflow: true },
  // running runs are few (the workers' slots): read whole, whatever the filter
  { where: (a) => `${a}.status = 'running'`, statuses: ['running'], byWorkflow: false },
  { where: (a) => `${a}.status NOT IN ('pending', 'running')`, statuses: RUN_STATUSES.filter((st) => st !== 'pending' && st !== 'running'), byWorkflow: true },
];
/** The group of status `st`. */
const groupOf = (st: RunStatus) => STATUS_GROUPS.find((g) => g.statuses.includes(st))!;

/**
 * The filters of `listRuns` and `countRuns` on alias `r` but the workflow and the key: $3 statuses,
 * $4 flow, $5 parent, $6 wait kind; $7 a run id the runs are older than.
 */
const OTHER_FILTERS = `($3::text[] IS NULL OR r.status = ANY($3))
        AND ($4::text IS NULL OR r.flow_id = $4)
        AND ($5::uuid IS NULL OR r.parent_id = $5)
        AND ($6::text IS NULL OR (r.status = 'waiting' AND (r.wait_kind = $6 OR ($6 = 'deps' AND r.deps_left > 0))))
        AND ($7::uuid IS NULL OR r.id < $7)`;

/** The filters of `listRuns` and `countRuns` on alias `r`: $1 workflow, $2 key, then {@link OTHER_FILTERS}. */
const RUN_FILTERS = `($1::text IS NULL OR r.workflow = $1)
        AND ($2::text IS NULL OR r.key = $2)
        -- a key without a workflow: through runs_key, one workflow at a time
        AND ($2::text IS NULL OR $1::text IS NOT NULL OR r.workflow = ANY(%WORKFLOWS%))
        AND ${OTHER_FILTERS}`;

/** `listRuns`: the filters, $9 a run id the runs are newer than, at most $8, by id `order` (newest first: DESC). */
const listRuns = (S: string, order: 'ASC' | 'DESC'): string => `
      SELECT ${runColumns(S, 'r')} FROM ${S}.runs r
      WHERE r.id IN (SELECT id FROM (${byStatusGroup(S, 'r.id', `AND ($9::uuid IS NULL OR r.id > $9) ORDER BY r.id ${order}`)}) g ORDER BY id ${order} LIMIT $8)
      ORDER BY r.id ${order}`;

/**
 * `listRuns` with a key ($2, never null here): for the workflow $1, else for each workflow with
 * keyed runs, the key's runs in id `order` through `runs_key_runs`, at most $8 of each; then the $8
 * first of them all. It reads a page, however many runs the key has and wherever they are.
 */
const listKeyRuns = (S: string, order: 'ASC' | 'DESC'): string => `
      SELECT ${runColumns(S, 'r')} FROM ${S}.runs r
      WHERE r.id IN (
        SELECT k.id FROM unnest(${givenOrIndexedWorkflows('$1', `${S}.runs`, 'key')}) w (workflow)
        CROSS JOIN LATERAL (
          -- the key as a range and the order by key then id, which only runs_key_runs gives: with
          -- key = $2 and the order by id, the planner may walk the primary key through all the
          -- history newer than the key's runs, filtering
          SELECT r.id FROM ${S}.runs r WHERE r.workflow = w.workflow AND r.key >= $2 AND r.key <= $2 AND ${OTHER_FILTERS}
            AND ($9::uuid IS NULL OR r.id > $9)
          ORDER BY r.key ${order}, r.id ${order} LIMIT $8) k
        ORDER BY k.id ${order} LIMIT $8)
      ORDER BY r.id ${order}`;

/** {@link RUN_FILTERS} for schema `S`. */
const runFilters = (S: string): string => RUN_FILTERS.replace('%WORKFLOWS%', indexedWorkflows(`${S}.runs`, 'key'));

/**
 * `select` of the runs matching the filters, read group by group of statuses (STATUS_GROUPS), each
 * through its own index, at most $8 of each after `tail` (more conditions, an ORDER BY): a group
 * none of the statuses $3 is in is not read.
 */
const byStatusGroup = (S: string, select: string, tail = ''): string =>
  STATUS_GROUPS.map(
    (g) => `(SELECT ${select} FROM ${S}.runs r WHERE ${runFilters(S)} AND ${g.where('r')}
        AND ($3::text[] IS NULL OR $3 && ${statusArray(g.statuses)})${g.byWorkflow ? statusesByWorkflow(S, g.where) : ''} ${tail} LIMIT $8)`,
  ).join(' UNION ALL ');

/**
 * Statuses without a workflow: read one workflow at a time through the group's index (else a rare
 * status would be looked for in every row of the group).
 */
const statusesByWorkflow = (S: string, where: (alias: string) => string): string => `
        AND ($3::text[] IS NULL OR $1::text IS NOT NULL OR r.workflow = ANY(${distinctWorkflows(`${S}.runs`, where)}))`;

/**
 * The end of a claim statement: the runs of CTE `c` (id, woke) become this node's ($1), each with
 * a new lease epoch and attempt and the claim's number (`seq`, a parameter; see the worker's
 * `ClaimSequence`), a run's first claim stamping `started_at` with `clock`; returns what an
 * execution needs (see `ClaimedRow`).
 */
export const claimUpdate = (S: string, seq: string, clock = 'now()'): string => `
      UPDATE ${S}.runs r SET status = CASE WHEN r.status = 'compensating' THEN 'compensating' ELSE 'running' END,
        node_id = $1, epoch = r.epoch + 1, attempt = r.attempt + 1, claim_seq = ${seq}::bigint,
        started_at = coalesce(r.started_at, ${clock}),
        deadline_at = ${runDeadline('r')},
        -- the inbox marks only what arrives while this claim's attempt runs: what came before, the
        -- attempt reads (a mark left would turn a later suspension on it into an extra re-run)
        wake_at = NULL, wait_kind = NULL, wait_name = NULL, inbox = '{}'
      -- the ids as an array, not a join with c: the runs are read once each by primary key whatever
      -- the planner thinks c holds (with stale statistics a join re-read every id for each row of c)
      WHERE r.id = ANY (ARRAY(SELECT id FROM c))
      RETURNING ${CLAIMED_COLUMNS},
        -- the step's recorded waits, for runs woken by their timer (others look them up if they wait again)
        CASE WHEN r.id IN (SELECT id FROM c WHERE woke) THEN (SELECT jsonb_object_agg(w.call, jsonb_build_object('kind', w.kind, 'name', w.name, 'until', w.until,
           'due', w.until IS NOT NULL AND w.until <= now(), 'children', w.children, 'timed_out', w.timed_out))
         FROM ${S}.waits w WHERE w.run_id = r.id AND w.step = r.step) END AS waits`;

/**
 * The rows a claim ending in {@link claimUpdate} returned, in the order their runs should begin
 * (higher priority first, then the earliest due): an UPDATE … RETURNING gives its rows in the order
 * it reached them, not in the order its CTE chose them.
 */
export const inClaimOrder = (rows: ClaimedRow[]): ClaimedRow[] =>
  rows.sort((a, b) => (b.priority ?? 0) - (a.priority ?? 0) || a.run_at.getTime() - b.run_at.getTime());

/** Every statement on the `runs` table, by name; `S` is the validated, quoted schema. */
export function runsStatements(S: string): Record<string, string> {
  // The runs of $1 (JSON array) whose key is free, and one wake-up for the workers ($2) if any is due.
  // Without keys there is nothing to conflict on: no ON CONFLICT, so no speculative insertion per row.
  const insertAndNotify = (keyed: boolean, source = `jsonb_to_recordset($1::jsonb) AS v(${INSERT_COLUMNS})`, guard = '') => `
      ins AS (
        INSERT INTO ${S}.runs (id, workflow, key, holds_key, input, run_at, timeout_ms, parent_id, parent_wait, runs_after_id, trace,
          debounce_until, priority, group_key)
        SELECT id, workflow, key, holds_key, input, ${RUN_AT}, timeout_ms, parent_id, parent_wait, runs_after_id, trace,
          ${DEBOUNCE_UNTIL}, coalesce(priority, 0), group_key
        FROM ${source} ${guard}
        ${keyed ? ON_KEY_CONFLICT : ''}
        RETURNING id, run_at
      ), note AS MATERIALIZED (
        SELECT pg_notify($2, '') FROM ins WHERE $2 <> '' AND run_at <= now() LIMIT 1
      )`;
  return {
    insert: `
      WITH ${insertAndNotify(true)}
      SELECT ins.id FROM ins LEFT JOIN note ON true`,
    // nothing to conflict on: every run is inserted (or the statement fails), so no ids come back
    insertUnkeyed: `
      WITH ${insertAndNotify(false)}
      SELECT count(*)::int AS n FROM ins LEFT JOIN note ON true`,
    insertClaimed: insertClaimed(S, ''),
    insertClaimedKeyed: insertClaimed(S, ON_KEY_CONFLICT),
    // A keyed start whose holder's status is one the policy settles (v.ok: useExisting, v.reject:
    // KeyTakenError; status bit masks over RUN_STATUSES) is answered from the statement's snapshot,
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
          coalesce(r.input, 'null') IS DISTINCT FROM coalesce(v.input, 'null') AS input_changed, v.input -- null: SQL NULL or JSON null
        FROM v CROSS JOIN LATERAL (
          -- one probe of the key index per start, whatever the planner guesses of $1's size
          SELECT r.id, r.status, r.input, 1 << (array_position(${STATUS_BITS_SQL}, r.status) - 1) AS bit
          FROM ${S}.runs r WHERE r.workflow = v.workflow AND r.key = v.key AND ${holdsKey('r')} LIMIT 1
        ) r
        WHERE (v.ok | v.reject) & r.bit <> 0
      ), ${insertAndNotify(true, 'v', 'WHERE NOT EXISTS (SELECT 1 FROM dup WHERE dup.start_id = v.id)')}, act AS (
        INSERT INTO ${S}.activity (kind, run_id, workflow, key, details)
        SELECT 'key_duplicate', dup.id, dup.workflow, dup.key, jsonb_build_object('workflow', dup.workflow, 'key', dup.key,
          'outcome', CASE WHEN dup.rejected THEN 'error' ELSE 'useExisting' END,
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
    holder: `SELECT ${HOLDER} FROM ${S}.runs r WHERE workflow = $1 AND key = $2 AND ${holdsKey('r')} FOR UPDATE`,
    // the holder without a lock, and the run waiting behind it (explainStart)
    peekHolder: `
      SELECT ${HOLDER},
        (SELECT w.id FROM ${S}.runs w
         WHERE w.workflow = $1 AND w.key = $2 AND w.status = 'waiting' AND NOT w.holds_key AND w.takes_key_after IS NOT NULL) AS waiter_id
      FROM ${S}.runs r WHERE workflow = $1 AND key = $2 AND ${holdsKey('r')}`,
    upsertWaiter: `
      INSERT INTO ${S}.runs (id, workflow, key, holds_key, status, input, run_at, timeout_ms, runs_after_id, takes_key_after, trace, priority, group_key)
      VALUES ($1, $2, $3, false, 'waiting', $4, 'infinity', $5, $6, $7, $8, $9, $10)
      ON CONFLICT (workflow, key) WHERE status = 'waiting' AND NOT holds_key AND takes_key_after IS NOT NULL
      DO UPDATE SET input = EXCLUDED.input, runs_after_id = EXCLUDED.runs_after_id, takes_key_after = EXCLUDED.takes_key_after,
        trace = EXCLUDED.trace, priority = EXCLUDED.priority, group_key = EXCLUDED.group_key
      RETURNING id`,
    repointWaiter: `
      UPDATE ${S}.runs SET runs_after_id = $3
      WHERE workflow = $1 AND key = $2 AND status = 'waiting' AND NOT holds_key AND takes_key_after IS NOT NULL`,
    // a run never picked up (pending, or a flow node waiting for its dependencies) takes a newer
    // input, and its start's priority ($5); its limits group ($4) is the newer input's (a group may be read from it)
    replaceInput: `
      UPDATE ${S}.runs SET input = $2, group_key = $4, priority = $5,
        run_at = CASE WHEN $3::bigint IS NULL THEN run_at
                      ELSE least(now() + $3 * interval '1 millisecond', coalesce(debounce_until, 'infinity')) END
      WHERE id = $1 AND status IN ('pending', 'waiting') AND started_at IS NULL RETURNING id`,
    // a holder that once waited behind another keeps no trace of it: waiting without its key, it
    // would count as a second run waiting behind the key (runs_key_waiter)
    dropKey: `UPDATE ${S}.runs SET holds_key = false, takes_key_after = NULL WHERE id = $1 AND holds_key RETURNING id`,
    takeKey: `UPDATE ${S}.runs SET holds_key = true WHERE id = $1 AND NOT holds_key RETURNING id`,
    get: `SELECT ${runColumns(S, 'r')}, ARRAY(SELECT c.id FROM ${S}.runs c WHERE c.parent_id = $1 ORDER BY c.id) AS children FROM ${S}.runs r WHERE id = $1`,
    // the row alone: however many children or re-adds the run has, one row of the table is read
    getRow: `SELECT * FROM ${S}.runs WHERE id = $1`,
    status: `SELECT status FROM ${S}.runs WHERE id = $1`,
    getForUpdate: `SELECT * FROM ${S}.runs WHERE id = $1 FOR UPDATE`,
    list: listRuns(S, 'DESC'),
    // the page after a cursor read upwards (the caller reverses it)
    listAfter: listRuns(S, 'ASC'),
    listKey: listKeyRuns(S, 'DESC'),
    listKeyAfter: listKeyRuns(S, 'ASC'),
    // at most $8 runs matching the filters, read group by group of statuses (byStatusGroup)
    count: `SELECT count(*)::int AS n FROM (${byStatusGroup(S, '1')} LIMIT $8) x`,
    // runs per (workflow, status) of $1 × every status, each at most $2, through the status' index
    countByStatus: `
      SELECT w.workflow, s.status, s.n FROM unnest($1::text[]) w (workflow) CROSS JOIN LATERAL (${RUN_STATUSES.map(
        (st) => `
        SELECT '${st}' AS status, (SELECT count(*)::int FROM (
          SELECT 1 FROM ${S}.runs r WHERE r.workflow = w.workflow AND ${groupOf(st).where('r')} AND r.status = '${st}' LIMIT $2) x) AS n`,
      ).join(' UNION ALL')}) s`,
    // Only while the node's own heartbeat is fresh ($4: nodeTimeout): a node declared dead, or one
    // that cannot heartbeat, claims nothing; $5: the claim's number (claimUpdate). wf: the node's
    // workflows ($3) that no operator paused. w: waiting runs whose timer ended (sleep, wait
    // timeout, workflow deadline) and released compensating runs whose retry delay passed; p: due
    // pending runs of those workflows, higher priority first, then oldest first, read per workflow
    // (a workflow the node does not run costs nothing): p0, runs of priority 0 from runs_pending;
    // pp, the others from runs_pending_priority (which holds only them, so it is empty unless
    // priorities are used). One statement.
    claim: `
      WITH alive AS (
        ${nodeMayClaim(S, '$1', '$4')}
      ), wf AS (
        SELECT f.workflow FROM unnest($3::text[]) AS f (workflow) WHERE ${notPaused(S, 'f.workflow')}
      ), w AS (
        SELECT id FROM ${S}.runs
        WHERE ((status = 'waiting' AND wake_at <= now()) OR (status = 'compensating' AND node_id IS NULL AND run_at <= now()))
          AND workflow = ANY(ARRAY(SELECT workflow FROM wf)) AND EXISTS (SELECT 1 FROM alive)
        LIMIT $2 FOR UPDATE SKIP LOCKED
      ), p0 AS (
        SELECT d.id, 0 AS priority, d.run_at FROM wf CROSS JOIN LATERAL (
          SELECT id, run_at FROM ${S}.runs
          WHERE status = 'pending' AND workflow = wf.workflow AND run_at <= now() AND priority = 0 AND EXISTS (SELECT 1 FROM alive)
          ORDER BY run_at LIMIT $2 FOR UPDATE SKIP LOCKED
        ) d
      ), pp AS (
        SELECT d.id, d.priority, d.run_at FROM wf CROSS JOIN LATERAL (
          SELECT id, priority, run_at FROM ${S}.runs
          WHERE status = 'pending' AND workflow = wf.workflow AND run_at <= now() AND priority <> 0 AND EXISTS (SELECT 1 FROM alive)
          ORDER BY priority DESC, run_at LIMIT $2 FOR UPDATE SKIP LOCKED
        ) d
      ), p AS (
        SELECT id FROM (SELECT * FROM p0 UNION ALL SELECT * FROM pp) d ORDER BY d.priority DESC, d.run_at LIMIT $2
      ), c AS (
        SELECT id, true AS woke FROM w UNION ALL SELECT id, false FROM p LIMIT $2
      )
${claimUpdate(S, '$5')}`,
    // $1: the transitions as a JSON array of arrays (see transition.fields.ts); the attempt's times
    // come as epoch milliseconds
    transition: `
      WITH v AS (
        SELECT x.*, to_timestamp(x.tried_from_ms / 1000.0) AS tried_from, to_timestamp(x.tried_to_ms / 1000.0) AS tried_to
        FROM (SELECT ${transitionFields('e')} FROM jsonb_array_elements($1::jsonb) e) x
      ), u AS (
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
        -- a step that ends and hands over to the next (running) empties it as a claim does: what came
        -- before, the next step reads; a mark its step read without suspending would turn the next
        -- step's suspension on it into an extra re-run
        inbox = CASE WHEN v.status = 'waiting' THEN array_remove(r.inbox, v.wait_kind || ':' || coalesce(v.wait_name, ''))
                     WHEN v.status = 'running' THEN '{}' ELSE r.inbox END,
        comp_step = coalesce(v.comp_step, r.comp_step),
        progress = coalesce(v.progress, r.progress),
        -- the attempt that ends the run stays on its row (see lastAttemptFields), the others go to step_attempts
        last_step = CASE WHEN v.final THEN v.tried_step END, last_attempt = CASE WHEN v.final THEN v.tried_attempt END,
        last_status = CASE WHEN v.final THEN v.tried_status END, last_started_at = CASE WHEN v.final THEN v.tried_from END,
        last_finished_at = CASE WHEN v.final THEN v.tried_to END
      FROM v
      -- the status test is joined to v (v.id is never null) so that the planner does not take it as a
      -- restriction of runs: statistics taken while these runs were pending say none is running, and a
      -- plan built on that scans runs first and reads the whole batch again for each run it finds
      WHERE r.id = v.id AND r.epoch = v.epoch AND (r.status IN ('running', 'compensating') OR v.id IS NULL)
      RETURNING r.id, r.epoch,
        -- the triggers may have handed a key over or cancelled other runs in this transaction
        CASE WHEN ${TRIGGERS_ACT} THEN now()::text END AS tx_at,
        CASE WHEN ${TRIGGERS_ACT} THEN (txid_current() % 4294967296)::text END AS tx_xid,
        v.tried_step, v.tried_attempt, v.tried_status, v.tried_from, v.tried_to, v.error, v.final
      ), tried AS (
        -- the attempt whose outcome this is (getRunHistory), only for the runs the execution still
        -- owned and that go on (an ending run keeps it on its row)
        INSERT INTO ${S}.step_attempts (run_id, step, attempt, status, started_at, finished_at, error, node_id)
        SELECT id, tried_step, tried_attempt, tried_status, tried_from, tried_to,
          CASE WHEN tried_status = 'failed' THEN error END, $2
        FROM u WHERE tried_status IS NOT NULL AND final IS NOT TRUE
      )
      -- only the transitions not applied (their execution no longer owned the run), and one mark of
      -- the transaction if the triggers may have acted in it (TRIGGERS_ACT)
      SELECT v.id, v.epoch, NULL AS tx_at, NULL AS tx_xid FROM v WHERE NOT EXISTS (SELECT 1 FROM u WHERE u.id = v.id AND u.epoch = v.epoch)
      UNION ALL (SELECT NULL, NULL, tx_at, tx_xid FROM u WHERE tx_at IS NOT NULL LIMIT 1)`,
    cancel: `
      UPDATE ${S}.runs SET status = 'cancelled', cancel_reason = $2, error = $3, finished_at = now()
      WHERE id = $1 AND status IN ('pending', 'running', 'waiting')
      RETURNING ${ENDED}`,
    // the attempt that had ended it joins the run's other attempts in step_attempts; the run is due
    // now: the workers are woken ($2, the channel), at the statement's commit
    retry: `
      WITH r AS (
        UPDATE ${S}.runs r SET status = 'pending', run_at = now(), attempt = 0, error = NULL, finished_at = NULL,
          deadline_at = NULL, node_id = NULL, last_status = NULL
        FROM ${S}.runs o WHERE o.id = r.id AND r.id = $1 AND r.status = 'failed' RETURNING r.id, ${lastAttemptFields('o')}
      ), h AS (
        INSERT INTO ${S}.step_attempts (run_id, step, attempt, status, started_at, finished_at, error, node_id)
        SELECT id, step, attempt, status, started_at, finished_at, error, node_id FROM r WHERE status IS NOT NULL
      ), note AS MATERIALIZED (
        SELECT pg_notify($2, '') FROM r
      ) SELECT id FROM r LEFT JOIN note ON true`,
    // the claim that took them counted an attempt: given back (a release is not a failed attempt)
    release: `
      UPDATE ${S}.runs r SET status = CASE WHEN r.status = 'compensating' THEN 'compensating' ELSE 'pending' END,
        node_id = NULL, run_at = now(), attempt = greatest(r.attempt - 1, 0)
      FROM unnest($1::uuid[], $3::int[]) AS x(id, epoch)
      WHERE r.id = x.id AND r.epoch = x.epoch AND r.node_id = $2 AND r.status IN ('running', 'compensating')`,
    wake: `SELECT pg_notify($1, '')`,
    // a paused workflow's runs are held on purpose, not a backlog, and are not read: the workflows
    // with pending runs (one runs_pending descent each) that are not paused, then ($1) their due runs
    backlogWorkflows: `
      SELECT coalesce(array_agg(w.workflow), '{}') AS workflows
      FROM unnest(${distinctWorkflows(`${S}.runs`, (a) => `${a}.status = 'pending'`)}) AS w (workflow) WHERE ${notPaused(S, 'w.workflow')}`,
    // a due run waits from greatest(run_at, when its workflow was last resumed): held by a pause, it
    // became claimable at the resume. workflow_controls.updated_at is written by ControlsStore's `set`
    // (a pause or a resume that changes `paused`) and its `ensure` (a limited workflow's row, inserted at a worker's start, DO
    // NOTHING: never moved), which no claim precedes; no other statement writes the table
    // a limited workflow's due runs, held back on purpose, wait from its last begin (runs_group_started_all), not while one of its runs runs
    backlog: `
      SELECT coalesce(sum(b.pending), 0)::int AS pending,
        coalesce(greatest(extract(epoch FROM now() - min(greatest(b.oldest, wc.updated_at, lim.moved))) * 1000, 0), 0)::float8 AS lag_ms
      FROM (SELECT r.workflow, count(*) AS pending, min(r.run_at) AS oldest, bool_or(r.group_key IS NOT NULL) AS limited FROM ${S}.runs r
            WHERE r.status = 'pending' AND r.run_at <= now() AND r.workflow = ANY($1::text[]) GROUP BY r.workflow) b
      LEFT JOIN ${S}.workflow_controls wc ON wc.workflow = b.workflow
      LEFT JOIN LATERAL (
        SELECT CASE WHEN EXISTS (SELECT 1 FROM ${S}.runs x WHERE x.status = 'running' AND x.workflow = b.workflow AND x.group_key IS NOT NULL) THEN now()
          ELSE (SELECT max(s.started_at) FROM ${S}.runs s WHERE s.workflow = b.workflow AND s.group_key IS NOT NULL AND s.started_at IS NOT NULL) END AS moved
        WHERE b.limited
      ) lim ON true`,
  };
}
