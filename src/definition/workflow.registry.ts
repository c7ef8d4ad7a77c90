import { Injectable } from '@nestjs/common';
import { UnknownWorkflowError } from '../errors';
import { WORKFLOW_METADATA } from './metadata.constants';
import type { WorkflowMetadata } from './workflow.decorator';
import type { WorkflowDefinition } from './workflow-definition';

/** A workflow given by its class or by its name. */
export type WorkflowRef = Function | string;

/** The workflows this app registered, by name. Filled once by the explorer at module init. */
@Injectable()
export class WorkflowRegistry {
  private readonly byName = new Map<string, WorkflowDefinition>();

  /** Adds a definition; a second workflow with the same name is a startup error. */
  add(def: WorkflowDefinition): void {
    const existing = this.byName.get(def.name);
    if (existing) {
      throw new Error(
        `nestjs-durable: two workflows are named "${def.name}" (${existing.type.name} and ${def.type.name}); workflow names must be unique`,
      );
    }
    this.byName.set(def.name, def);
  }

  /** The workflow's name, for a class or a name (without checking that it is registered). */
  nameOf(ref: WorkflowRef): string {
    if (typeof ref === 'string') return ref;
    const meta: WorkflowMetadata | undefined = typeof ref === 'function' ? Reflect.getMetadata(WORKFLOW_METADATA, ref) : undefined;
    return meta?.name ?? (typeof ref === 'function' ? ref.name : String(ref));
  }

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
