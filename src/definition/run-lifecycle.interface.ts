import type { RunInfo } from '../domain/run-info';

/**
 * Implemented by a workflow class that wants to know when one of its runs completed. Called once
 * per run after it ends, by a worker node that has the workflow (any node), at least once: a node
 * that dies before the call returns leaves it to another node, and a hook that throws is called
 * again with back-off. Make it idempotent.
 */
export interface OnRunCompleted {
  onRunCompleted(run: RunInfo): void | Promise<void>;
}

/**
 * Implemented by a workflow class that wants to know when one of its runs failed (statuses
 * `failed`, `compensated`, `compensation_failed`; a run retried and failing again calls it again).
 * Same contract as {@link OnRunCompleted}.
 */
export interface OnRunFailed {
  onRunFailed(run: RunInfo): void | Promise<void>;
}

/** Implemented by a workflow class that wants to know when one of its runs was cancelled. Same contract as {@link OnRunCompleted}. */
export interface OnRunCancelled {
  onRunCancelled(run: RunInfo): void | Promise<void>;
}

/** The lifecycle hooks a workflow class may have (methods called after a run ends). */
export const LIFECYCLE_HOOKS = ['onRunCompleted', 'onRunFailed', 'onRunCancelled'] as const;

/** One of {@link LIFECYCLE_HOOKS}. */
export type LifecycleHook = (typeof LIFECYCLE_HOOKS)[number];

/** The lifecycle hooks a workflow instance has (methods of those names). */
export function lifecycleHooksOf(instance: object): LifecycleHook[] {
  return LIFECYCLE_HOOKS.filter((h) => typeof (instance as Record<string, unknown>)[h] === 'function');
}
