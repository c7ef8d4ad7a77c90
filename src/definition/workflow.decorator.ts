import { SetMetadata } from '@nestjs/common';
import { DurableValidationError } from '../errors';
import type { WorkflowOptions } from '../options/workflow-options.interface';
import { assertValid, onDuplicateProblem, priorityProblem, problem, reuseProblem, unknownOptionProblems } from '../domain/validation';
import { RETRY_OPTION_NAMES } from '../domain/retry.policy';
import { DEBOUNCE_OPTION_NAMES, WORKFLOW_OPTION_NAMES } from '../options/option-names';
import { queueControlProblems } from '../options/queue-controls';
import { DEFAULT_REUSE } from '../domain/keys.policy';
import { WORKFLOW_METADATA } from './metadata.constants';

/** What `@Workflow` records on its class. */
export interface WorkflowMetadata {
  name: string;
  options: WorkflowOptions;
}

const mergeProblem = (merge: unknown) =>
  merge === undefined || merge === 'last' || merge === 'first' || typeof merge === 'function'
    ? undefined
    : problem('debounce.merge', merge, 'isMerge', "debounce.merge must be 'last', 'first' or a function (held, incoming) => input");

/**
 * Marks a provider class as a durable workflow named `name`; its `@Step` methods run in the order
 * they are declared. Metadata only: the module's explorer discovers it. Bad options (an unknown
 * `reuse` or `onDuplicate`, a misspelt option name) throw `DurableValidationError` when the class is defined.
 */
export function Workflow(name: string, options: WorkflowOptions = {}): ClassDecorator {
  if (typeof name !== 'string' || name.length < 1 || name.length > 200) {
    throw new DurableValidationError(`@Workflow name must be a string of 1 to 200 characters, got ${String(name)}`);
  }
  assertValid(`@Workflow('${name}')`, [
    ...unknownOptionProblems(options, WORKFLOW_OPTION_NAMES),
    ...unknownOptionProblems(options?.debounce, DEBOUNCE_OPTION_NAMES, 'debounce.'),
    ...unknownOptionProblems(options?.retry, RETRY_OPTION_NAMES, 'retry.'),
    reuseProblem(options?.reuse),
    priorityProblem(options?.priority),
    ...queueControlProblems(options?.concurrency, options?.rateLimit),
    onDuplicateProblem(options?.onDuplicate, options?.reuse ?? DEFAULT_REUSE),
    mergeProblem(options?.debounce?.merge),
  ]);
  return SetMetadata<string, WorkflowMetadata>(WORKFLOW_METADATA, { name, options });
}
