import type { Queryable } from './db';
import type { RunStatus } from '../domain/run-info';

/** What an event is: sent with `sendEvent` or provided with `provideInput`. */
export type EventKind = 'event' | 'input';

/** The run as event delivery needs it, locked. */
export interface EventTarget {
  status: RunStatus;
  wait_kind: string | null;
  wait_name: string | null;
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
      lockRun: `SELECT status, wait_kind, wait_name FROM ${S}.runs WHERE id = $1 FOR UPDATE`,
      // a statement of its own after the lock: it sees what the run's holder wrote before letting go
      // (a wait marked timed out), which a subquery of the locking statement would not; the wait's
      // row is locked too, so a caller's REPEATABLE READ transaction that read it before fails with
      // a serialization failure rather than keep an event for a wait that timed out
      waitOpen: `
        SELECT EXISTS (SELECT 1 FROM ${S}.waits w
                       WHERE w.run_id = r.id AND w.step = r.step AND w.kind = $2 AND w.name = $3 AND NOT w.timed_out
                       FOR SHARE OF w)
          AND NOT EXISTS (SELECT 1 FROM ${S}.events e
                          WHERE e.run_id = r.id AND e.kind = $2 AND e.name = $3 AND e.received_at IS NOT NULL) AS wait_open
        FROM ${S}.runs r WHERE id = $1`,
      insert: `
        INSERT INTO ${S}.events (run_id, kind, name, payload, received_at)
        VALUES ($1, $2, $3, $4::jsonb, CASE WHEN $5::boolean THEN now() END)`,
      wake: `
        WITH u AS (
          UPDATE ${S}.runs SET status = 'pending', run_at = now(), wake_at = NULL, wait_kind = NULL, wait_name = NULL,
            inbox = array_remove(inbox, $2)
          WHERE id = $1 AND status = 'waiting' RETURNING id
        )
        SELECT pg_notify($3, '') FROM u`,
      mark: `
        UPDATE ${S}.runs SET inbox = array_append(array_remove(inbox, $2), $2) WHERE id = $1`,
      receive: `
        WITH got AS (
          SELECT payload FROM ${S}.events
          WHERE run_id = $1 AND kind = $2 AND name = $3 AND received_at IS NOT NULL
        ), pick AS (
          UPDATE ${S}.events SET received_at = now()
          WHERE id = (SELECT id FROM ${S}.events WHERE run_id = $1 AND kind = $2 AND name = $3 ORDER BY id DESC LIMIT 1)
            AND NOT EXISTS (SELECT 1 FROM got)
          RETURNING payload
        )
        SELECT payload FROM got UNION ALL SELECT payload FROM pick LIMIT 1`,
    };
  }

  /** The run's status and what it waits for, row-locked for the caller's transaction. */
  async lockRun(q: Queryable, runId: string): Promise<EventTarget | undefined> {
    const [row] = await q.query<EventTarget>(this.sql.lockRun, [runId]);
    return row;
  }

  /**
   * Whether the running step has reached `wait(kind, name)` and is suspending on it (its wait is
   * recorded, nothing received for the name yet, not timed out): the run is waiting for it in all
   * but status. Asked once the run's lock is taken (see `lockRun`).
   */
  async waitOpen(q: Queryable, runId: string, kind: EventKind, name: string): Promise<boolean> {
    const [row] = await q.query<{ wait_open: boolean }>(this.sql.waitOpen, [runId, kind, name]);
    return row.wait_open;
  }

  /** Stores an event; `received` when it is handed to the wait that is waiting for it. */
  async insert(q: Queryable, runId: string, kind: EventKind, name: string, payload: unknown, received: boolean): Promise<void> {
    await q.query(this.sql.insert, [runId, kind, name, JSON.stringify(payload ?? null), received]);
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
   * (marked received from now on); undefined when there is none.
   */
  async receive(q: Queryable, runId: string, kind: EventKind, name: string): Promise<{ payload: unknown } | undefined> {
    const [row] = await q.query<{ payload: unknown }>(this.sql.receive, [runId, kind, name]);
    return row;
  }
}

/** The inbox mark of a wait: `kind:name`. */
export const inboxMark = (kind: string, name: string | null | undefined): string => `${kind}:${name ?? ''}`;
