import { SCHEDULES_METADATA, STEPS_METADATA, WORKFLOW_METADATA } from './metadata.constants';
import type { ScheduleMetadata } from './schedule.decorator';
import type { StepMetadata } from './step.decorator';
import type { WorkflowMetadata } from './workflow.decorator';

/** A workflow given by its class or by its name. */
export type WorkflowRef = Function | string;

/** What `@Workflow` recorded on a class, or undefined for any other value. */
export function workflowMetadataOf(type: unknown): WorkflowMetadata | undefined {
  return typeof type === 'function' ? Reflect.getMetadata(WORKFLOW_METADATA, type) : undefined;
}

/** The `@Step` methods of a class, in declaration order. */
export function stepsMetadataOf(type: Function): StepMetadata[] {
  return Reflect.getMetadata(STEPS_METADATA, type) ?? [];
}

/** The `@Schedule`s of a class. */
export function schedulesMetadataOf(type: Function): ScheduleMetadata[] {
  return Reflect.getMetadata(SCHEDULES_METADATA, type) ?? [];
}

/** The name of a workflow given by class (its `@Workflow` name, else the class name) or by name. */
export function workflowNameOf(ref: WorkflowRef): string {
  if (typeof ref === 'string') return ref;
  return workflowMetadataOf(ref)?.name ?? (typeof ref === 'function' ? ref.name : String(ref));
}
