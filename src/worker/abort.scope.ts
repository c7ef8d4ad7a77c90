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
  /** Those waiting on the abort (an array: rarely more than two, and every run has two scopes). */
  private readonly listeners: ((reason: Error) => void)[] = [];

  /** Calls `listener` with the reason when the scope is aborted (until {@link unlisten}). */
  listen(listener: (reason: Error) => void): void {
    this.listeners.push(listener);
  }

  unlisten(listener: (reason: Error) => void): void {
    const i = this.listeners.indexOf(listener);
    if (i >= 0) this.listeners.splice(i, 1);
  }

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
