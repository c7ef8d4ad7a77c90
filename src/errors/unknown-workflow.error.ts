import { DurableError } from './durable.error';

/**
 * No `@Workflow` with that name (or class) is registered in this app (`need`: what the definition
 * was needed for, when a stored run of that workflow was acted on).
 */
export class UnknownWorkflowError extends DurableError {
  readonly code = 'unknown_workflow' as const;

  constructor(
    readonly workflow: string,
    need?: string,
  ) {
    super(need ? `${need} needs the definition of workflow "${workflow}", which is not registered here` : `unknown workflow "${workflow}"`);
  }
}
