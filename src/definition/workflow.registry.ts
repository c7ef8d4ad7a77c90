import { Injectable } from '@nestjs/common';
import { UnknownWorkflowError } from '../errors';
import type { WorkflowDefinition } from './workflow-definition';
import { workflowNameOf, type WorkflowRef } from './workflow-metadata';

/** The workflows this app registered, by name. Filled once by the explorer at module init. */
@Injectable()
export class WorkflowRegistry {
  private readonly byName = new Map<string, WorkflowDefinition>();

  /** Adds a definition; a second workflow with the same name is a startup error. */
  add(def: WorkflowDefinition): void {
    const existing = this.byName.get(def.name);
    if (existing) {
      throw new Error(`nestjs-durable: two workflows are named "${def.name}" (${existing.type.name} and ${def.type.name}); workflow names must be unique`);
    }
    this.byName.set(def.name, def);
  }

  /** The workflow's name, for a class or a name (without checking that it is registered). */
  nameOf(ref: WorkflowRef): string {
    return workflowNameOf(ref);
  }

  /** The name of step `index` of `workflow`, or null (past the last step, or not registered here). */
  readonly stepName = (workflow: string, index: number): string | null => this.byName.get(workflow)?.steps[index]?.name ?? null;

  /** The definition, or `UnknownWorkflowError`. */
  get(ref: WorkflowRef): WorkflowDefinition {
    const name = this.nameOf(ref);
    const def = this.byName.get(name);
    if (!def) throw new UnknownWorkflowError(name);
    return def;
  }

  /** The definition or undefined. */
  find(name: string): WorkflowDefinition | undefined {
    return this.byName.get(name);
  }

  /** Every registered name. */
  names(): string[] {
    return [...this.byName.keys()];
  }
}
