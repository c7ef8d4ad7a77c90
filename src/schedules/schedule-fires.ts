import type { Logger } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { KeyTakenError, ScheduleNotFoundError } from '../errors';
import { serializeError } from '../domain/serialize-error';
import { unstorableName } from '../domain/call-options';
import type { StartResult } from '../domain/run-info';
import { managerQueryable, type Queryable } from '../store/db';
import type { CallerTx } from '../store/caller-tx';
import type { ClaimedTick, ScheduleCopy, SchedulesStore } from '../store/schedules.store';
import type { DurableConnection } from '../core/durable.connection';
import type { Starter } from '../runs/starter';
import { tickAt } from './cron';

/** What a fire did. */
export interface FireResult {
  /** false: another node fired this tick, or the tick is older than the last one fired. */
  fired: boolean;
  runId?: string | null;
  outcome?: string;
}

/** The ticks of one schedule a node saw, and what came of them. */
export interface TickStats {
  ticks: number;
  fired: number;
  lost: number;
  failed: number;
}

/** What a fire's start did: a held key under `onDuplicate: 'error'` is a skip, `taken` its error. */
interface Fired {
  runId: string | null;
  outcome: string;
  taken?: KeyTakenError;
}

/**
 * A fire's transaction (tick or trigger), whatever the database's default: a tick that waited on
 * the schedule's row re-reads it once the row is free (taken by another node, or stored again
 * unchanged) where REPEATABLE READ or SERIALIZABLE would fail it, and the tick would be lost.
 */
const FIRE_ISOLATION = 'READ COMMITTED';

/**
 * A node's fires of stored schedules: a tick, which starts the run only on the node that wins the
 * database guard of (schedule, tick) (`SchedulesStore.claimTick`), and a trigger, which fires now.
 * Each takes the schedule's row, starts the run and records the fire in one transaction.
 */
export class ScheduleFires {
  /** Per schedule: ticks this node saw and what came of them (tests, debugging). */
  readonly stats = new Map<string, TickStats>();

  constructor(
    private readonly connection: DurableConnection,
    private readonly store: SchedulesStore,
    private readonly starter: Starter,
    private readonly nodeId: string,
    private readonly logger: Logger,
  ) {}

  /**
   * Fires `name` now, with the schedule's key and input (so a held key follows the workflow's
   * `onDuplicate`; with `'error'` it rejects with `KeyTakenError`). `ScheduleNotFoundError` when
   * there is none, or for a name no schedule can have. `tx`: a caller's READ COMMITTED transaction
   * to fire in; a skip's `KeyTakenError` is then thrown before it ends (its rollback undoes the skip's record).
   */
  async trigger(name: string, tx?: CallerTx): Promise<StartResult> {
    if (unstorableName(name)) throw new ScheduleNotFoundError(String(name));
    const fire = async (q: Queryable, manager?: EntityManager) => {
      // as in a tick: a node that stops in the middle of the trigger does not hold the row for good
      await this.store.fireSession(q);
      // the row first, as a tick takes it: a tick that starts under the same key waits, never deadlocks
      const row = await this.store.lockForFire(q, name);
      if (!row) throw new ScheduleNotFoundError(name);
      const out = await this.startFor(row, manager, tx);
      await this.store.recordFire(q, name, null, out.runId, out.outcome);
      return out;
    };
    const result = await (tx ? fire(tx.q) : this.fireTransaction((manager) => fire(managerQueryable(manager), manager)));
    if (result.taken) throw result.taken;
    return { runId: result.runId!, outcome: result.outcome as StartResult['outcome'] };
  }

  /** One tick on this node: take the (schedule, tick) guard and start the run, or find it taken. */
  async tick(local: ScheduleCopy, at: Date, next: Date | null): Promise<FireResult> {
    const stat = this.stat(local.name);
    try {
      const tick = tickAt(local.cron, local.timezone, at);
      if (!tick) return { fired: false }; // an instant the cron library named in a repeated hour, of no tick
      const out = await this.fireTransaction(async (manager) => {
        const q = managerQueryable(manager);
        await this.store.fireSession(q);
        const claimed = await this.store.claimTick(q, local, tick, this.nodeId, next);
        if (!claimed) return undefined;
        const started = await this.startFor(claimed, manager);
        await this.store.recordFire(q, local.name, tick, started.runId, started.outcome);
        return started;
      });
      if (!out) {
        stat.lost++;
        return { fired: false };
      }
      stat.fired++;
      return { fired: true, runId: out.runId, outcome: out.outcome };
    } catch (err) {
      // Nothing of this tick was written (its transaction rolled back): another node may still fire it.
      stat.failed++;
      this.logger.warn(`schedule "${local.name}" tick ${at.toISOString()} failed: ${(err as Error).message}`);
      await this.store.recordFailure(this.connection.db, local.name, serializeError(err)).catch(() => undefined);
      return { fired: false, outcome: 'failed' };
    } finally {
      stat.ticks++;
    }
  }

  private stat(name: string): TickStats {
    let s = this.stats.get(name);
    if (!s) this.stats.set(name, (s = { ticks: 0, fired: 0, lost: 0, failed: 0 }));
    return s;
  }

  /**
   * Runs a fire (tick or trigger) in a transaction of its own, on a connection of its own: never in
   * one the app keeps in an async context (with `typeorm-transactional` the DataSource's `manager` is
   * the running `@Transactional()` method's, and the fire would join it as a savepoint: its isolation
   * level ignored, its idle timeout left on the caller's transaction, the schedule's row locked and
   * its run uncommitted until the caller ends).
   */
  private async fireTransaction<T>(fn: (manager: EntityManager) => Promise<T>): Promise<T> {
    const runner = this.connection.dataSource.createQueryRunner();
    try {
      return await runner.manager.transaction(FIRE_ISOLATION, fn);
    } finally {
      await runner.release();
    }
  }

  /** Starts the schedule's run inside the fire's transaction (`manager`'s, or `tx`); a held key under `onDuplicate: 'error'` is a skip. */
  private async startFor(s: ClaimedTick, manager?: EntityManager, tx?: CallerTx): Promise<Fired> {
    try {
      const r = await this.starter.start(s.workflow, s.input ?? undefined, { key: s.key, manager }, { tx });
      return { runId: r.runId, outcome: r.outcome };
    } catch (err) {
      if (err instanceof KeyTakenError) return { runId: err.holderId, outcome: 'skipped', taken: err };
      throw err;
    }
  }
}
