import type { WorkflowRegistry } from '../definition/workflow.registry';
import type { ClaimLimits } from '../store/controls.store';

/** A worker's workflows, as its claims read them. */
export interface WorkerWorkflows {
  /** Every registered workflow the worker runs. */
  all: string[];
  /** Those with a concurrency or rate limit: claimed within their limits. */
  limited: ClaimLimits[];
  /** The others: claimed by the plain claim. */
  plain: string[];
}

/**
 * The workflows a worker runs (`names`, or every registered one), split by whether they have queue
 * controls; names not registered on this node are left out.
 */
export function workerWorkflows(registry: WorkflowRegistry, names: string[] | undefined): WorkerWorkflows {
  const all = (names ?? registry.names()).filter((n) => registry.find(n));
  const out: WorkerWorkflows = { all, limited: [], plain: [] };
  for (const name of all) {
    const controls = registry.find(name)?.controls;
    if (controls) out.limited.push({ workflow: name, concurrency: controls.concurrency, rateLimit: controls.rateLimit });
    else out.plain.push(name);
  }
  return out;
}
