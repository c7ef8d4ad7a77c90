import type { Type } from '@nestjs/common';
import { Client } from 'pg';
import type { DurableService } from '../../src';
import { databaseUrl } from './db';
import { waitFor, waitForLockWait } from './wait';

/** What {@link raceWaitTimeout} hands the race. */
export interface WaitTimeoutRace {
  /** The run, whose step is blocked marking its wait timed out. */
  runId: string;
  /** Lets the step go on (ends the lock on `waits`). */
  unblock: () => Promise<void>;
}

/**
 * Sets up an event sent as its wait times out: starts `workflow` (one step waiting for the event
 * `go` with a timeout), waits until the run waits, then holds writes to `waits` (a SHARE lock on a
 * connection of its own) until the step, run again once the wait's timer ended, is blocked marking
 * its wait timed out; then runs `race`. The lock ends whatever happens.
 */
export async function raceWaitTimeout<T>(
  durable: DurableService,
  schema: string,
  workflow: Type<unknown>,
  race: (setup: WaitTimeoutRace) => Promise<T>,
): Promise<T> {
  const waits = `"${schema}".waits`;
  const locker = new Client({ connectionString: databaseUrl() });
  await locker.connect();
  try {
    const { runId } = await durable.start(workflow);
    await waitFor(async () => (await durable.getRun(runId))?.status === 'waiting', { message: 'the run waits for its event' });
    await locker.query('BEGIN');
    await locker.query(`LOCK TABLE ${waits} IN SHARE MODE`);
    await waitForLockWait([waits, 'timed_out = true'], 'the step marks its wait timed out');
    return await race({ runId, unblock: async () => void (await locker.query('COMMIT')) });
  } finally {
    await locker.query('ROLLBACK').catch(() => undefined);
    await locker.end();
  }
}
