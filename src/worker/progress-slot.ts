/** The latest `ctx.progress` value of a run, and whether it is still to be written. */
export class ProgressSlot {
  private value: unknown = null;
  private dirty = false;

  /** A new value, to be written. */
  report(value: unknown): void {
    this.value = value;
    this.dirty = true;
  }

  /** The value not written yet, if any; `taken` marks it written (a later report makes it dirty again). */
  unsent(): { value: unknown; taken: () => void } | undefined {
    if (!this.dirty) return undefined;
    const value = this.value;
    return {
      value,
      taken: () => {
        if (this.value === value) this.dirty = false;
      },
    };
  }
}
