import type { OnDuplicate, ReusePolicy } from '../options/workflow-options.interface';

/** A retry policy with every default applied, in milliseconds. */
export interface ResolvedRetry {
  attempts: number;
  backoff: 'exponential' | 'fixed';
  initialDelayMs: number;
  maxDelayMs: number;
}

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
  debounce?: { periodMs: number; timeoutMs?: number };
  timeoutMs?: number;
  steps: StepDefinition[];
}
