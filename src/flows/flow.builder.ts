import { workflowNameOf, type WorkflowRef } from '../definition/workflow-metadata';
import { optionNames, optionsObjectProblem } from '../domain/validation';
import { FlowGraph } from './flow.graph';

/** Dependency handling shared by a flow and its nodes (all default to false). */
export interface FlowDepOptions {
  /** Count a cancelled dep as completed instead of cancelling the dependant. */
  ignoreCancelled?: boolean;
  /** Count a failed dep (failed, compensated, compensation_failed) as completed instead of cancelling the dependant. */
  ignoreFailed?: boolean;
  /** Count a deleted dep (pruned or removed before it finished, or never appended) as completed. */
  ignoreDeleted?: boolean;
}

/** Options of `durable.flow()`. */
export interface FlowOptions extends FlowDepOptions {
  /** The flow id: unique; default a UUIDv7. */
  id?: string;
  /** A free label (need not be unique), e.g. `'nightly-etl'`. */
  name?: string;
}

/** Options of `FlowBuilder.add()`; the ignore options override the flow's for this node. */
export interface FlowNodeOptions extends FlowDepOptions {
  /** Names of the nodes this one waits for. */
  deps?: string[];
  /**
   * The node's key, under its workflow's key rules (docs/keys.md): the node takes it when a `start`
   * would create a run; when the key is taken, the flow is refused with `KeyTakenError`.
   */
  key?: string | null;
}

/** The option names of `durable.flow()` and of `FlowBuilder.add()` (anything else is refused as misspelt). */
export const FLOW_OPTION_NAMES = optionNames<FlowOptions>({ id: true, name: true, ignoreCancelled: true, ignoreFailed: true, ignoreDeleted: true });
export const FLOW_NODE_OPTION_NAMES = optionNames<FlowNodeOptions>({ deps: true, key: true, ignoreCancelled: true, ignoreFailed: true, ignoreDeleted: true });

/**
 * A copy of `options` when they are a plain object (`{}` for undefined or null), else them as
 * given (a flow id or a deps array where the options go), for `startFlow` to refuse.
 */
export function copiedOptions<T extends object>(options: T | null | undefined): T {
  return optionsObjectProblem(options, 'options', []) ? (options as T) : ({ ...options } as T);
}

/** One node as added to a builder. */
export interface FlowNodeSpec {
  name: string;
  /** As given to `add`. */
  workflowRef: WorkflowRef;
  /** The workflow's name. */
  workflow: string;
  input: unknown;
  deps: string[];
  options: FlowNodeOptions;
}

/** Set on a builder returned by `appendFlow`: the flow it adds to. */
export interface FlowAppendTarget {
  flowId: string;
  flowName: string | null;
  checkDeps: boolean;
}

/**
 * Builds a DAG flow: named nodes, each a run of a workflow, with dependency edges. Chain `add`
 * calls (loops for dynamic fan-out / fan-in), then `durable.startFlow(builder)`. Nothing is checked
 * until `startFlow`, which refuses a bad graph with one `DurableValidationError` listing every
 * problem (duplicate names or keys, unknown deps or workflows, cycles, an empty flow).
 */
export class FlowBuilder {
  private readonly list: FlowNodeSpec[] = [];

  constructor(
    readonly options: FlowOptions = {},
    /** Set when the builder appends to an existing flow (`appendFlow`). */
    readonly appendTo?: FlowAppendTarget,
  ) {}

  /**
   * Adds node `name`: a run of `workflow` with `input`, waiting for the nodes named in `deps`.
   * Returns the builder.
   */
  add<TInput = unknown>(name: string, workflow: WorkflowRef, input?: TInput, options?: FlowNodeOptions | null): this {
    const opts = copiedOptions(options);
    this.list.push({
      name,
      workflowRef: workflow,
      workflow: workflowNameOf(workflow),
      input: input === undefined ? null : input,
      // copied; anything but an array is kept as given and refused by startFlow's validation
      deps: Array.isArray(opts.deps) ? [...opts.deps] : (((opts.deps as unknown) ?? []) as string[]),
      options: opts,
    });
    return this;
  }

  /** The nodes added so far, in order. */
  get nodes(): readonly FlowNodeSpec[] {
    return this.list;
  }

  /** The flow's id when it was given (or when appending), else undefined until started. */
  get id(): string | undefined {
    return this.appendTo?.flowId ?? this.options.id;
  }

  /** The graph of the nodes added so far (deps on nodes outside this builder appear as sources only). */
  toGraph(): FlowGraph {
    return new FlowGraph(
      this.list.map((n) => ({ name: n.name, workflow: n.workflow, deps: Array.isArray(n.deps) ? [...n.deps] : [] })),
      this.id ?? null,
      this.appendTo?.flowName ?? this.options.name ?? null,
    );
  }

  /** `toGraph().toMermaid()`: `flowchart TD` with `name[Workflow]` vertices. */
  toMermaid(): string {
    return this.toGraph().toMermaid();
  }

  /** `toGraph().toDot()`: a Graphviz digraph. */
  toDot(): string {
    return this.toGraph().toDot();
  }
}
