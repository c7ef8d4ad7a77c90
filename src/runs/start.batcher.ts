import { sqlState } from '../store/db';
import type { StartRow, StartAnswer } from '../store/runs.types';
import { GroupCommit } from '../core/group-commit';

interface Pending {
  start: StartRow;
  resolve: (answer: StartAnswer | undefined) => void;
  reject: (err: unknown) => void;
}

/** Most starts inserted by one statement. */
const MAX_BATCH = 500;
/** Statements in flight at once (each holds one pooled connection). */
const MAX_IN_FLIGHT = 2;
/** Most starts waiting for a statement; more callers wait for room (back-pressure). */
const MAX_QUEUED = 10_000;

/**
 * Group commit of autocommit starts (no caller transaction): concurrent `start()` calls share one
 * insert statement and one commit, each still resolving only once its run is committed. A start
 * arriving when fewer than {@link MAX_IN_FLIGHT} statements are out goes alone at once, so a
 * single caller's latency is one round trip as before.
 */
export class StartBatcher {
  private readonly group = new GroupCommit<Pending>((batch) => this.write(batch), MAX_BATCH, MAX_IN_FLIGHT, MAX_QUEUED);

  constructor(
    /** Inserts (or answers) the starts in one autocommit statement, in order. */
    private readonly insert: (starts: StartRow[]) => Promise<(StartAnswer | undefined)[]>,
  ) {}

  /** No start queued or in flight: one submitted now would be a statement of its own. */
  get idle(): boolean {
    return this.group.isIdle();
  }

  /** Queues a start; resolves with its statement's answer for it. */
  submit(start: StartRow): Promise<StartAnswer | undefined> {
    return new Promise((resolve, reject) => void this.group.push({ start, resolve, reject }));
  }

  private async write(batch: Pending[]): Promise<void> {
    try {
      const answers = await this.insert(batch.map((p) => p.start));
      batch.forEach((p, i) => p.resolve(answers[i]));
    } catch (err) {
      if (batch.length === 1 || !oneRowsFault(err)) {
        batch.forEach((p) => p.reject(err));
        return;
      }
      // Postgres refused the statement for what may be one start's values (nothing of it was
      // written): each start is tried alone, one after another, so that refusal is its own.
      for (const p of batch) await this.write([p]);
    }
  }
}

/**
 * Whether a refused statement may be the fault of one of its rows: a data exception (22…), an
 * integrity violation (23…, e.g. a constraint of the user's own), a deadlock or a serialization
 * failure. Anything else — a lost connection (which may even have committed), a read-only server,
 * a shutdown, a timeout — is the same for every start of the batch and is not retried.
 */
function oneRowsFault(err: unknown): boolean {
  const code = sqlState(err);
  return code !== undefined && (code.startsWith('22') || code.startsWith('23') || code === '40P01' || code === '40001');
}
