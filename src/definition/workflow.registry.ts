import { Injectable } from '@nestjs/common';
import { DurableValidationError, NotReadyError, UnknownWorkflowError } from '../errors';
import type { WorkflowDefinition } from './workflow-definition';
import { workflowMetadataOf, workflowNameOf, type WorkflowRef } from './workflow-metadata';

/** The workflows this app registered, by name. Filled once by the explorer at module init. */
@Injectable()
export class WorkflowRegistry {
  private readonly byName = new Map<string, WorkflowDefinition>();
  private complete = false;

  /** Adds a definition; a second workflow with the same name is a startup error. */
  add(def: WorkflowDefinition): void {
    const existing = this.byName.get(def.name);
    if (existing) {
      throw new DurableValidationError(
        `two workflows are named "${def.name}" (${existing.type.name} and ${def.type.name}): give each workflow a name of its own ` +
          '(in @Workflow(name) or DurableWorkflow(name); the name is stored with every run)',
      );
    }
    this.byName.set(def.name, def);
  }

  /** Called by the explorer once every provider was looked at: from now on an unknown name is unknown. */
  discovered(): void {
    this.complete = true;
  }

  /** The workflow's name, for a class or a name (without checking that it is registered). */
  nameOf(ref: WorkflowRef): string {
    return workflowNameOf(ref);
  }

  /** The workflow a read filters by, or undefined for none (undefined or null); see {@link nameOf}. */
  filterName(ref: WorkflowRef | null | undefined): string | undefined {
    return ref === undefined || ref === null ? undefined : workflowNameOf(ref);
  }

  /** The name of step `index` of `workflow`, or null (past the last step, or not registered here). */
  readonly stepName = (workflow: string, index: number): string | null => this.byName.get(workflow)?.steps[index]?.name ?? null;

  /**
   * The definition; `NotReadyError` before the app initialised, else `UnknownWorkflowError`
   * saying why it is unknown (a class that is no provider, a class without `@Workflow`, a name).
   */
  get(ref: WorkflowRef): WorkflowDefinition {
    if (!this.complete) throw new NotReadyError(`workflow ${typeof ref === 'function' ? ref.name : JSON.stringify(ref)}`);
    const def = this.byName.get(this.nameOf(ref));
    if (!def) throw this.unknown(ref);
    return def;
  }

  private unknown(ref: WorkflowRef): UnknownWorkflowError {
    const name = this.nameOf(ref);
    if (typeof ref === 'function') {
      if (!workflowMetadataOf(ref)) return new UnknownWorkflowError(name, undefined, `class ${ref.name} is not a workflow: decorate it with @Workflow(name)`);
      return new UnknownWorkflowError(
        name,
        undefined,
        `workflow class ${ref.name} ("${name}") is not a provider of any module: add it to the providers of a module of this app ` +
          '(workflows are found among the providers)',
      );
    }
    const names = this.names();
    const known = names.length
      ? names
          .slice(0, 20)
          .map((n) => `"${n}"`)
          .join(', ') + (names.length > 20 ? ', …' : '')
      : 'none';
    return new UnknownWorkflowError(
      name,
      undefined,
      `unknown workflow ${JSON.stringify(name)}: no @Workflow class of that name is a provider of this app (registered: ${known})`,
    );
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
