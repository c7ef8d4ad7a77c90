/** Metadata key of `@Workflow` on a class. */
export const WORKFLOW_METADATA = 'nestjs-durable:workflow';
/** Metadata key of the ordered `@Step` list on a class. */
export const STEPS_METADATA = 'nestjs-durable:steps';
/** Metadata key of the `@Schedule` list on a workflow class. */
export const SCHEDULES_METADATA = 'nestjs-durable:schedules';
/** Metadata key marking the base class a `DurableWorkflow(…)` call made. */
export const WORKFLOW_BASE_METADATA = 'nestjs-durable:workflow-base';
