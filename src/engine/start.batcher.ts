import { DatabaseError } from 'pg';
import type { StartRow, StartAnswer } from '../store/runs.store';
import { GroupCommit } from './group-commit';

interface Pending {
  start: StartRow;
  resolve: (answer: StartAnswer | undefined) => void;
  reject: (err: unknown) => void;
}

/** Most starts inserted by one statement. */
const MAX_BATCH = 500;
/** Statements in flight at once (each holds one pooled connection). */
const MAX_IN_FLIGHT = 2;

/**
 * Group commit of autocommit starts (no caller transaction): concurrent `start()` calls share one
 * insert statement and one commit, each still resolving only once its run is committed. A start
 * arriving when fewer than {@link MAX_IN_FLIGHT} statements are out goes alone at once, so a
 * single caller's latency is one round trip as before.
 */
export class StartBatcher {
  private readonly group = new GroupCommit<Pending>((batch) => this.write(batch), MAX_BATCH, MAX_IN_FLIGHT);

  constructor(
    /** Inserts (or answers) the starts in one autocommit statement, in order. */
    private readonly insert: (starts: StartRow[]) => Promise<(StartAnswer | undefined)[]>,
  ) {}

  /** Queues a start; resolves with its statement's answer for it. */
  submit(start: StartRow): Promise<StartAnswer | undefined> {
    return new Promise((resolve, reject) => this.group.push({ start, resolve, reject }));
  }

  private async write(batch: Pending[]): Promise<void> {
    try {
      const answers = await this.insert(batch.map((p) => p.start));
      batch.forEach((p, i) => p.resolve(answers[i]));
    } catch (err) {
      // Postgres refused the statement (nothing of it was written): each start is tried
      // alone, so one start's refusal is its own. A lost connection may have committed:
      // no retry, every start of the batch gets the error.
      if (batch.length === 1 || !(err instanceof DatabaseError)) batch.forEach((p) => p.reject(err));
      else await Promise.all(batch.map((p) => this.write([p])));
    }
  }
}

