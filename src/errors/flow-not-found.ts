import { RunNotFoundError } from './run-not-found.error';

/**
 * `err` said of flow `flowId`, as the CLI and the dashboard say it: the flows API answers a flow it
 * does not find as `RunNotFoundError(flowId)` ("run <flowId> not found"), which becomes a
 * `RunNotFoundError` of the same id and code saying "flow <flowId> not found". Anything else (a
 * node's pruned run included) is returned as it is.
 */
export function flowNotFound(flowId: string, err: unknown): unknown {
  const id = String(flowId);
  if (!(err instanceof RunNotFoundError) || err.runId !== id) return err;
  const said = new RunNotFoundError(id);
  said.message = `flow ${id} not found`;
  return said;
}
