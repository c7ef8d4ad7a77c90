import { TimeoutError } from '../errors';

/**
 * The message of the error of a run past its workflow deadline, as a template whose `%s` is the
 * workflow's name: what a worker gives a run it finds past its deadline and what the timeout sweep
 * writes in SQL (`format(WORKFLOW_TIMED_OUT, workflow)`), for a run never begun as for one under way.
 */
export const WORKFLOW_TIMED_OUT = 'workflow "%s" timed out';

/** The error of a run of `workflow` past its workflow deadline (see {@link WORKFLOW_TIMED_OUT}). */
export function workflowTimedOut(workflow: string): TimeoutError {
  return new TimeoutError(workflowTimedOutMessage(workflow));
}

/** {@link WORKFLOW_TIMED_OUT} for `workflow` (a name with `$` or `%` in it taken as it is). */
export function workflowTimedOutMessage(workflow: string): string {
  return WORKFLOW_TIMED_OUT.replace('%s', () => workflow);
}
