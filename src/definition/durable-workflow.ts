import type { WorkflowOptions } from '../options/workflow-options.interface';
import { WORKFLOW_BASE_METADATA } from './metadata.constants';
import { Workflow } from './workflow.decorator';

/** A key that exists in types only: the options a {@link DurableWorkflow} base was given. */
declare const WORKFLOW_OPTIONS_TYPE: unique symbol;

/** A workflow class whose options are part of its type (it extends {@link DurableWorkflow}). */
export interface TypedWorkflowClass<O extends WorkflowOptions> {
  /** Never present at run time: it carries the options in the class's type. */
  readonly [WORKFLOW_OPTIONS_TYPE]?: O;
}

/** What {@link DurableWorkflow} returns: a base class that carries its workflow's options in its type. */
export type DurableWorkflowBase<O extends WorkflowOptions> = (abstract new () => object) & TypedWorkflowClass<O>;

/**
 * Declares a workflow by inheritance instead of with `@Workflow`, so that its options are part of
 * the class's type: `class ProcessArticle extends DurableWorkflow('process_article', { reuse: 'never' })`.
 * The class is then a workflow named `name` with `options`, exactly as with
 * `@Workflow(name, options)` (same validation when the class is defined), and `start(ProcessArticle,
 * input, { onDuplicate: 'runAgain' })` fails to compile. Give the class `@Injectable()` when its
 * constructor takes dependencies (Nest reads their types from a decorator's metadata); do not also
 * decorate it with `@Workflow`.
 */
export function DurableWorkflow<const O extends WorkflowOptions = Record<never, never>>(name: string, options?: O): DurableWorkflowBase<O> {
  const decorate = Workflow(name, options);
  const base = class {};
  Object.defineProperty(base, 'name', { value: `DurableWorkflow(${name})` });
  decorate(base);
  Reflect.defineMetadata(WORKFLOW_BASE_METADATA, true, base);
  return base as DurableWorkflowBase<O>;
}
