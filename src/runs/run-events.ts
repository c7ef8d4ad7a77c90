import { Injectable } from '@nestjs/common';
import { RunNotFoundError, SerializationError } from '../errors';
import { isUuid } from '../domain/uuid';
import { assertValid, jsonProblem, nameProblem, problem } from '../domain/validation';
import { callOptions } from '../domain/call-options';
import { DurableConnection } from '../core/durable.connection';
import type { Queryable } from '../store/db';
import { EventsStore } from '../store/events.store';
import { inTurn } from '../store/tx-turns';
import type { CallerTx } from '../store/caller-tx';
import { deliverEvent, type SendEventOutcome } from './event-delivery';

/**
 * Events and human input sent to runs: `sendEvent`, `provideInput`. Each may be given a caller's
 * transaction (`tx`, internal: the dashboard's, which records the action in it) to deliver in.
 */
@Injectable()
export class RunEvents {
  constructor(
    private readonly connection: DurableConnection,
    private readonly events: EventsStore,
  ) {}

  /**
   * Sends the event `name` to a run: `'delivered'` when it was waiting for it (it resumes); `'kept'`
   * when it is kept for a later `waitForEvent(name)` — with `buffer: true`, or when the running
   * step has just reached that wait and is suspending on it; else `'dropped'`. `buffer` must be a
   * boolean (or null/undefined: false). Joins `tx`, else the ambient transaction (module option
   * `transactionManager`) when there is one.
   */
  async send(runId: string, name: string, payload: unknown, options?: { buffer?: boolean } | null, tx?: CallerTx): Promise<SendEventOutcome> {
    const buffer = callOptions('sendEvent', options, ['buffer']).buffer ?? false;
    assertValid('sendEvent', [typeof buffer === 'boolean' ? undefined : problem('buffer', buffer, 'isBoolean', 'buffer must be a boolean')]);
    const join = async () => tx?.q ?? this.connection.join(undefined, 'sendEvent');
    return this.deliver(runId, name, payload, { buffer, kind: 'event' }, 'sendEvent', join);
  }

  /**
   * Provides the value a run waits for with `ctx.waitForInput(name)`: `'delivered'` when it was
   * waiting for it; `'kept'` when it does not wait for it yet; `'dropped'` (ignored) when the run
   * had finished or its workflow deadline had passed. Joins `tx` when given.
   */
  provideInput(runId: string, name: string, value: unknown, tx?: CallerTx): Promise<SendEventOutcome> {
    return this.deliver(runId, name, value, { buffer: true, kind: 'input' }, 'provideInput', tx && (async () => tx.q));
  }

  /**
   * Delivers on the caller's transaction `join` finds, else in a transaction of its own; the name
   * and payload are checked first, so a refused one costs no statement on the caller's transaction.
   */
  private async deliver(
    runId: string,
    name: string,
    payload: unknown,
    opts: { buffer: boolean; kind: 'event' | 'input' },
    what: string,
    join?: () => Promise<Queryable | undefined>,
  ) {
    assertValid(what, [nameProblem(name), jsonProblem(payload, 'payload')]);
    if (!isUuid(runId)) throw new RunNotFoundError(runId);
    const joined = await join?.();
    const deliver = (q: Queryable) => deliverEvent(this.events, q, runId, name, payload, opts);
    // in a caller's REPEATABLE READ or SERIALIZABLE transaction, a race with the run's holder is a
    // serialization failure: the caller retries its transaction
    // (calls made at once on one caller's transaction take turns: see inTurn)
    const outcome = await (joined ? inTurn(joined, () => deliver(joined)) : this.connection.db.tx(deliver)).catch((err) =>
      Promise.reject(SerializationError.wrap(err)),
    );
    if (!outcome) throw new RunNotFoundError(runId);
    return outcome;
  }
}
