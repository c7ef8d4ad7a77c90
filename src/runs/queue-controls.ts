import { Injectable } from '@nestjs/common';
import { DurableConnection } from '../core/durable.connection';
import { WorkflowRegistry } from '../definition/workflow.registry';
import type { WorkflowRef } from '../definition/workflow-metadata';
import { assertValid, nameProblem } from '../domain/validation';
import { ControlsStore } from '../store/controls.store';
import type { CallerTx } from '../store/caller-tx';

/**
 * Pausing and resuming workflows on every node: a paused workflow's runs are not claimed (running
 * ones finish), from every node's next claim on. The state lives in the database.
 */
@Injectable()
export class QueueControls {
  constructor(
    private readonly connection: DurableConnection,
    private readonly registry: WorkflowRegistry,
    private readonly controls: ControlsStore,
  ) {}

  /** Stops claiming the workflow's runs on every node (in `tx`, internal: a caller's transaction, when given). */
  pause(workflow: WorkflowRef, tx?: CallerTx): Promise<void> {
    return this.set(workflow, true, tx);
  }

  /** Claims the workflow's runs again (in `tx` when given), and wakes the workers once that committed. */
  resume(workflow: WorkflowRef, tx?: CallerTx): Promise<void> {
    return this.set(workflow, false, tx);
  }

  /** The names of the paused workflows. */
  paused(): Promise<Set<string>> {
    return this.controls.paused(this.connection.db);
  }

  /** The names of the workflows ever paused (or resumed), or limited on some worker. */
  controlled(): Promise<Set<string>> {
    return this.controls.controlled(this.connection.db);
  }

  /**
   * A class must be a registered workflow; a name must be a name, and a registered one wherever
   * workflows are registered (an app that registers none, such as the CLI, pauses any name).
   */
  private async set(ref: WorkflowRef, paused: boolean, tx: CallerTx | undefined): Promise<void> {
    if (typeof ref !== 'function') assertValid(paused ? 'pause' : 'resume', [nameProblem(ref, 'workflow')]);
    if (typeof ref === 'function' || this.registry.names().length > 0) this.registry.get(ref);
    // the wake-up is a NOTIFY of the statement: PostgreSQL delivers it at the commit
    await this.controls.setPaused(tx?.q ?? this.connection.db, this.registry.nameOf(ref), paused);
  }
}
