import { createHash } from 'node:crypto';
import type { OnDuplicate, ReusePolicy } from '../domain/keys.policy';
import type { WorkflowDefinition } from './workflow-definition';

/**
 * What the database holds of a workflow's definition (table `workflow_definitions`): its key rules,
 * which a start applies and `keys explain` needs, and the names of its steps. A debounce `merge`
 * function is recorded as `'function'`.
 */
export interface DefinitionRecord {
  workflow: string;
  reuse: ReusePolicy;
  onDuplicate: OnDuplicate;
  debounce: { periodMs: number; timeoutMs: number | null; merge: 'last' | 'first' | 'function' } | null;
  steps: string[];
  /**
   * A digest of everything above and of the rest of the definition's options (timeout, priority,
   * limits, retry and timeout of each step): two nodes with the same hash run the same definition.
   */
  hash: string;
}

/** The record of a registered workflow's definition. */
export function definitionRecord(def: WorkflowDefinition): DefinitionRecord {
  const debounce = def.debounce && {
    periodMs: def.debounce.periodMs,
    timeoutMs: def.debounce.timeoutMs ?? null,
    merge: typeof def.debounce.merge === 'function' ? ('function' as const) : def.debounce.merge,
  };
  const rules = { workflow: def.name, reuse: def.reuse, onDuplicate: def.onDuplicate, debounce: debounce ?? null, steps: def.steps.map((s) => s.name) };
  const rest = {
    timeoutMs: def.timeoutMs ?? null,
    priority: def.priority,
    controls: def.controls ? { ...def.controls, by: typeof def.controls.by === 'function' ? 'function' : (def.controls.by ?? null) } : null,
    steps: def.steps.map((s) => ({ retry: s.retry, timeoutMs: s.timeoutMs ?? null, compensate: s.compensate ?? null })),
  };
  return {
    ...rules,
    hash: createHash('sha256')
      .update(JSON.stringify([rules, rest]))
      .digest('hex')
      .slice(0, 16),
  };
}
