import { Injectable } from '@nestjs/common';
import { DurableConnection } from '../core/durable.connection';
import { WorkflowRegistry } from '../definition/workflow.registry';
import type { WorkflowRef } from '../definition/workflow-metadata';
import { assertValid, nameProblem } from '../domain/validation';
import { ControlsStore } from '../store/controls.store';

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

  /** Stops claiming the workflow's runs on every node. */
  pause(workflow: WorkflowRef): Promise<void> {
    return this.set(workflow, true);
  }

  /** Claims the workflow's runs again (and wakes the workers). */
  resume(workflow: WorkflowRef): Promise<void> {
    return this.set(workflow, false);
  }

  /** The names of the paused workflows. */
  paused(): Promise<Set<string>> {
    return this.controls.paused(this.connection.db);
  }

  /**
   * A class must be a registered workflow; a name must be a name, and a registered one wherever
   * workflows are registered (an app that registers none, such as the CLI, pauses any name).
   */
  private async set(ref: WorkflowRef, paused: boolean): Promise<void> {
    if (typeof ref !== 'function') assertValid(paused ? 'pause' : 'resume', [nameProblem(ref, 'workflow')]);
    if (typeof ref === 'function' || this.registry.names().length > 0) this.registry.get(ref);
    await this.controls.setPaused(this.connection.db, this.registry.nameOf(ref), paused);
  }
}
