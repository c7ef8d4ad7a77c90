import type { OnDuplicate, ReusePolicy } from '../domain/keys.policy';
import type { ResolvedRetry } from '../domain/retry.policy';
import type { DebounceMerge } from '../options/workflow-options.interface';

/** One step of a registered workflow. */
export interface StepDefinition {
  name: string;
  index: number;
  retry: ResolvedRetry;
  timeoutMs?: number;
  compensate?: string;
  /** The bound method. */
  run: (ctx: unknown) => unknown;
}

/** A registered workflow: its policy, its steps in order and the provider instance. */
export interface WorkflowDefinition {
  name: string;
  /** The decorated class. */
  type: Function;
  instance: object;
  reuse: ReusePolicy;
  onDuplicate: OnDuplicate;
  debounce?: { periodMs: number; timeoutMs?: number; merge: DebounceMerge };
  timeoutMs?: number;
  steps: StepDefinition[];
}
