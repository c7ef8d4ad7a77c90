import { DurableError } from './durable.error';

/** No `@Workflow` with that name (or class) is registered in this app. */
export class UnknownWorkflowError extends DurableError {
  readonly code = 'unknown_workflow' as const;

  constructor(readonly workflow: string) {
    super(`unknown workflow "${workflow}"`);
  }
}
