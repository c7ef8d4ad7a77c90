import type { Queryable } from '../store/db';
import { EVERY_CHANGE, type ScheduleChanges, type ScheduleCopy, type SchedulesStore } from '../store/schedules.store';

/** How long the records of removed schedules are kept (a node's re-read learns removals from them). */
export const REMOVALS_KEPT_MS = 3_600_000;
/**
 * A node whose last read of the schedules is older than this, on the database's clock (paused,
 * cut off), reads them all again rather than what changed: removals it has not seen may be pruned.
 */
const FULL_READ_AFTER_MS = REMOVALS_KEPT_MS / 2;

/**
 * Whether `read` is of the server `last` was, in the same order of transaction ids: a failover (to
 * a replica that may not have the last transactions), a point-in-time recovery or a dump restored
 * into another cluster give ids that a mark taken before may count as seen.
 */
function sameServer(last: Pick<ScheduleChanges, 'mark' | 'server'>, read: ScheduleChanges): boolean {
  return read.server === last.server && BigInt(read.mark.xmax) >= BigInt(last.mark.xmax);
}

/** What a node's re-read found: schedules to mount, and names to unmount unless mounted from `rows`. */
export interface ScheduleDelta {
  rows: ScheduleCopy[];
  /** Names removed; `'all'`: every mounted name not in `rows` (the read was of every schedule). */
  gone: string[] | 'all';
}

/**
 * A node's reads of the schedules: every one the first time, then those changed since its last
 * read — every one again after a `TRUNCATE`, when its last read is older than the removals kept, or
 * was of another server.
 */
export class ScheduleChangesReader {
  /** The last read: its mark (the next read reads what changed since), the database's time of it, and the server read. */
  private last?: Pick<ScheduleChanges, 'mark' | 'at' | 'server'>;

  constructor(private readonly store: SchedulesStore) {}

  /** Reads what changed since the last read; {@link done} then makes it the last read. */
  async read(db: Queryable): Promise<ScheduleDelta & { done: () => void }> {
    const { last } = this;
    let read: ScheduleChanges = await this.store.changes(db, last?.mark ?? EVERY_CHANGE);
    let full = !last;
    if (last && (read.at - last.at > FULL_READ_AFTER_MS || read.removed.includes(null) || !sameServer(last, read))) {
      read = await this.store.changes(db, EVERY_CHANGE);
      full = true;
    }
    const removed = read.removed.filter((n): n is string => n !== null);
    return {
      rows: read.rows,
      gone: full ? 'all' : removed,
      done: () => {
        this.last = { mark: read.mark, at: read.at, server: read.server };
      },
    };
  }
}
