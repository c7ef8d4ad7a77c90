import type { WorkflowRef } from '../definition/workflow-metadata';

/** Options of `@IdempotentStart`. */
export interface IdempotentStartOptions<TInput = unknown> {
  /**
   * The run's input, from the request. Called before the route's pipes: check the body here and
   * throw an `HttpException` (e.g. `BadRequestException`) for a bad one; nothing is started then.
   */
  input: (req: any) => TInput | Promise<TInput>; // eslint-disable-line @typescript-eslint/no-explicit-any
  /** The header carrying the key. Default `'Idempotency-Key'`. */
  header?: string;
}

/** What `@IdempotentStart` records on the route for its interceptor. */
export interface IdempotentStartSpec {
  workflow: WorkflowRef;
  input: (req: unknown) => unknown;
  header: string;
}

/** Metadata key of {@link IdempotentStartSpec} on a route handler. */
export const IDEMPOTENT_START = Symbol('durable:idempotent-start');

/** Where the interceptor leaves the run on the request, for the `@IdempotentRun()` parameter. */
export const IDEMPOTENT_RUN = Symbol('durable:idempotent-run');
