import { DurableError } from './durable.error';

/**
 * No `@Workflow` with that name (or class) is registered in this app. `need`: what the definition
 * was needed for, when a stored run of that workflow was acted on; `message`: the whole message,
 * when the caller knows why it is unknown (a class that is no provider, a class without `@Workflow`).
 */
export class UnknownWorkflowError extends DurableError {
  readonly code = 'unknown_workflow' as const;

  constructor(
    /** The workflow's name (or the class's name when it has no `@Workflow`). */
    readonly workflow: string,
    need?: string,
    message?: string,
  ) {
    super(message ?? (need ? `${need} needs the definition of workflow "${workflow}", which is not registered here` : `unknown workflow "${workflow}"`));
  }
}
