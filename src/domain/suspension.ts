/** What a waiting run waits for. */
export type WaitKind = 'sleep' | 'event' | 'input' | 'children';

const BRAND = Symbol.for('nestjs-durable.suspension');

/**
 * Thrown by a wait that is not satisfied yet (`ctx.sleep`, `waitForEvent`, `waitForInput`,
 * `callWorkflow`, `parallel`): it ends the step's attempt and the run becomes `waiting`. When the
 * wait is satisfied the step runs again from its start. Never swallow it: see {@link isSuspension}.
 */
export class Suspension extends Error {
  readonly [BRAND] = true;

  constructor(
    readonly kind: WaitKind,
    readonly waitName: string | null,
    /** When the wait's timer ends (sleep end or wait timeout), or null. */
    readonly until: Date | null,
  ) {
    super(`the run waits (${kind}${waitName ? ` "${waitName}"` : ''}); this attempt of the step ends here and the step runs again when the wait is satisfied`);
    this.name = 'Suspension';
  }
}

/**
 * True when `err` is the internal signal of a wait that is not satisfied yet. Code that catches
 * everything must rethrow it: `catch (e) { if (isSuspension(e)) throw e; … }`.
 */
export function isSuspension(err: unknown): err is Suspension {
  return typeof err === 'object' && err !== null && (err as Record<symbol, unknown>)[BRAND] === true;
}
