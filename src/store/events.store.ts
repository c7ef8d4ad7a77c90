import type { Queryable } from './db';
import { runDeadline } from './sql';
import type { RunStatus } from '../domain/run-info';

/** What an event is: sent with `sendEvent` or provided with `provideInput`. */
export type EventKind = 'event' | 'input';

/** The run as event delivery needs it, locked. */
export interface EventTarget {
  status: RunStatus;
  wait_kind: string | null;
  wait_name: string | null;
  /** When the event is sent: the locking statement's start (database clock), as text (microseconds kept). */
  at: string;
  /** The waiting run's timer (its wait's timeout, or its deadline) has not ended at `at`. */
  timer_open: boolean;
  /** The run's workflow deadline has passed at `at`: it times out, whatever it gets. */
  past_deadline: boolean;
}

/** Statements on `events` (and the run-row changes that delivering one makes). */
export class EventsStore {
  private readonly sql: Record<string, string>;

  constructor(
    schema: string,
    /** Channel the workers LISTEN on. */
    private readonly channel: string,
  ) {
    const S = `"${schema}"`;
    this.sql = {
      // the send's moment is when this statement began (a send that then waits for the lock counts
      // from before it): every decision on the event, and the time it is stored with, use that one
      // moment; timer_open: the waiting run's timer (its wait's timeout or its deadline) had not ended;
      // past_deadline: the run's deadline (runDeadline, as the claim stores it) has passed
      lockRun: `
        SELECT status, wait_kind, wait_name, statement_timestamp()::text AS at,
          (wake_at IS NULL OR wake_at > statement_timestamp()) AS timer_open,
          coalesce(${runDeadline('r')} <= statement_timestamp(), false) AS past_deadline
        FROM ${S}.runs r WHERE id = $1 FOR UPDATE`,
      // a statement of its own after the lock: it sees what the run's holder wrote before letting go
      // (a wait marked timed out), which a subquery of the locking statement would not; the wait's
      // row is locked too, so a caller's REPEATABLE READ transaction that read it before fails with
      // a serialization failure rather than keep an event for a wait that timed out; a wait whose
      // timeout had passed at the send's moment ($4) is closed, whether a worker marked it yet or not
      waitOpen: `
        SELECT EXISTS (SELECT 1 FROM ${S}.waits w
                       WHERE w.run_id = r.id AND w.step = r.step AND w.kind = $2 AND w.name = $3 AND NOT w.timed_out
                         AND (w.until IS NULL OR w.until > $4::timestamptz)
                       FOR SHARE OF w)
          AND NOT EXISTS (SELECT 1 FROM ${S}.events e
                          WHERE e.run_id = r.id AND e.kind = $2 AND e.name = $3 AND e.received_at IS NOT NULL) AS wait_open
        FROM ${S}.runs r WHERE id = $1`,
      insert: `
        INSERT INTO ${S}.events (run_id, kind, name, payload, received_at, created_at)
        VALUES ($1, $2, $3, $4::jsonb, CASE WHEN $5::boolean THEN now() END, $6::timestamptz)`,
      wake: `
        WITH u AS (
          UPDATE ${S}.runs SET status = 'pending', run_at = now(), wake_at = NULL, wait_kind = NULL, wait_name = NULL,
            inbox = array_remove(inbox, $2)
          WHERE id = $1 AND status = 'waiting' RETURNING id
        )
        SELECT pg_notify($3, '') FROM u`,
      mark: `
        UPDATE ${S}.runs SET inbox = array_append(array_remove(inbox, $2), $2) WHERE id = $1`,
      // $4: the wait's end (null: none); an event kept from then on is not its answer (kept for a later
      // wait); the newest is the one sent last (created_at, the send's moment; id among sends of one
      // moment), read through events_receive from the wait's end down: the events kept after it are
      // not read (the infinity stands for no end, keeping one index condition for both)
      receive: `
        WITH got AS (
          SELECT payload FROM ${S}.events
          WHERE run_id = $1 AND kind = $2 AND name = $3 AND received_at IS NOT NULL
        ), pick AS (
          UPDATE ${S}.events SET received_at = now()
          WHERE id = (SELECT id FROM ${S}.events WHERE run_id = $1 AND kind = $2 AND name = $3
                        AND created_at < coalesce($4::timestamptz, 'infinity') ORDER BY created_at DESC, id DESC LIMIT 1)
            AND NOT EXISTS (SELECT 1 FROM got)
          RETURNING payload
        )
        SELECT payload FROM got UNION ALL SELECT payload FROM pick LIMIT 1`,
    };
  }

  /** The run's status, what it waits for and whether its timer ended, row-locked for the caller's transaction, with the send's moment. */
  async lockRun(q: Queryable, runId: string): Promise<EventTarget | undefined> {
    const [row] = await q.query<EventTarget>(this.sql.lockRun, [runId]);
    return row;
  }

  /**
   * Whether the running step has reached `wait(kind, name)` and is suspending on it (its wait is
   * recorded, nothing received for the name yet, not timed out): the run is waiting for it in all
   * but status — and its timeout had not passed `at` (the send's moment, see `lockRun`). Asked
   * once the run's lock is taken.
   */
  async waitOpen(q: Queryable, runId: string, kind: EventKind, name: string, at: string): Promise<boolean> {
    const [row] = await q.query<{ wait_open: boolean }>(this.sql.waitOpen, [runId, kind, name, at]);
    return row.wait_open;
  }

  /** Stores an event sent at `at` (see `lockRun`); `received` when it is handed to the wait that is waiting for it. */
  async insert(q: Queryable, runId: string, kind: EventKind, name: string, payload: unknown, received: boolean, at: string): Promise<void> {
    await q.query(this.sql.insert, [runId, kind, name, JSON.stringify(payload ?? null), received, at]);
  }

  /** Makes a waiting run pending (and notifies the workers). */
  async wake(q: Queryable, runId: string, mark: string): Promise<void> {
    await q.query(this.sql.wake, [runId, mark, this.channel]);
  }

  /** Notes in the run's inbox that something for `mark` (`kind:name`) was kept. */
  async mark(q: Queryable, runId: string, mark: string): Promise<void> {
    await q.query(this.sql.mark, [runId, mark]);
  }

  /**
   * The event a wait gets: the one already received for (kind, name), else the newest one kept
   * before the wait's end `until` (marked received from now on); undefined when there is none.
   */
  async receive(q: Queryable, runId: string, kind: EventKind, name: string, until: Date | string | null): Promise<{ payload: unknown } | undefined> {
    const [row] = await q.query<{ payload: unknown }>(this.sql.receive, [runId, kind, name, until]);
    return row;
  }
}

/**
 * True for the error of `receive` when another execution of the wait's step (a stalled one and its
 * replacement, reading at the same moment) marked another event received for the wait first: the
 * unique violation of `events_received`, raised once that mark is committed.
 */
export const receivedElsewhere = (err: unknown): boolean =>
  typeof err === 'object' && err !== null && (err as { code?: unknown }).code === '23505' && (err as { constraint?: unknown }).constraint === 'events_received';

/** The inbox mark of a wait: `kind:name`. */
export const inboxMark = (kind: string, name: string | null | undefined): string => `${kind}:${name ?? ''}`;
