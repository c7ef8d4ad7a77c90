/**
 * The abort state a run's attempts share: why it was aborted (the first reason wins), its
 * AbortSignal (made only when a step reads `ctx.signal`: an AbortController costs more than most
 * steps) and the attempts waiting on it. An attempt keeps the scope it started under, so a step
 * the workflow deadline aborted stays aborted when its compensations run under a new scope.
 */
export class AbortScope {
  /** Why it was aborted, if it was. */
  reason?: Error;
  private controller?: AbortController;
  /** Attempts waiting on the abort. */
  readonly listeners = new Set<(reason: Error) => void>();

  /** Aborts the scope (once: later reasons are ignored). */
  abort(reason: Error): void {
    if (this.reason) return;
    this.reason = reason;
    this.controller?.abort(reason);
    for (const listener of [...this.listeners]) listener(reason);
  }

  /** The scope's AbortSignal (aborted already if the scope was). */
  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.reason) this.controller.abort(this.reason);
    }
    return this.controller.signal;
  }
}
