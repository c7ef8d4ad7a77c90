import { Inject, Injectable } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import { DurableValidationError } from '../errors';
import { MAX_SPAN_MS, MAX_TIMER_MS, toMs } from '../domain/duration';
import { resolveRetry } from '../domain/retry.policy';
import { DEFAULT_ON_DUPLICATE, DEFAULT_REUSE } from '../domain/keys.policy';
import { DURABLE_OPTIONS } from '../options/durable.module-definition';
import type { DurableModuleOptions } from '../options/durable-options.interface';
import type { WorkflowMetadata } from './workflow.decorator';
import type { StepDefinition, WorkflowControls, WorkflowDefinition } from './workflow-definition';
import type { WorkflowOptions } from '../options/workflow-options.interface';
import { stepsMetadataOf, workflowMetadataOf } from './workflow-metadata';
import { WorkflowRegistry } from './workflow.registry';
import { WORKFLOW_BASE_METADATA, WORKFLOW_METADATA } from './metadata.constants';
import { PARAMTYPES_METADATA, SELF_DECLARED_DEPS_METADATA } from '@nestjs/common/constants';

/** The resolved limits of a workflow's options, or undefined when it has none. */
function controlsOf(name: string, options: WorkflowOptions): WorkflowControls | undefined {
  const { concurrency: c, rateLimit: r } = options;
  if (c === undefined && r === undefined) return undefined;
  const concurrency = c === undefined ? undefined : typeof c === 'number' ? { limit: c, grouped: false } : { limit: c.limit, grouped: true };
  const rateLimit = r && { limit: r.limit, periodMs: toMs(r.period, `workflow "${name}": rateLimit.period`, MAX_SPAN_MS), grouped: r.by !== undefined };
  return { by: (typeof c === 'object' ? c.by : undefined) ?? r?.by, concurrency, rateLimit };
}

/**
 * Refuses a class that extends `DurableWorkflow(…)` and is also decorated with `@Workflow` (its
 * type would carry options other than those it runs with), or that takes constructor dependencies
 * without a decorator of its own or an `@Inject` on each (Nest could not read their types, so they
 * would be undefined).
 */
function assertDeclaredOnce(name: string, type: Function): void {
  if (!Reflect.getMetadata(WORKFLOW_BASE_METADATA, type) || Reflect.hasOwnMetadata(WORKFLOW_BASE_METADATA, type)) return;
  if (Reflect.hasOwnMetadata(WORKFLOW_METADATA, type)) {
    throw new DurableValidationError(
      `workflow "${name}" (${type.name}) extends DurableWorkflow(…) and is also decorated with @Workflow: declare it one way, not both`,
    );
  }
  const injected: unknown[] = Reflect.getOwnMetadata(SELF_DECLARED_DEPS_METADATA, type) ?? []; // @Inject(token) on a parameter
  if (type.length > injected.length && !Reflect.hasOwnMetadata(PARAMTYPES_METADATA, type)) {
    throw new DurableValidationError(
      `workflow "${name}" (${type.name}) takes constructor dependencies but has no decorator: give it @Injectable() (or @Inject(token) on every parameter) so Nest can inject them`,
    );
  }
}

/** Finds every `@Workflow` provider in the app and registers it with its steps. */
@Injectable()
export class WorkflowExplorer {
  constructor(
    private readonly discovery: DiscoveryService,
    private readonly registry: WorkflowRegistry,
    @Inject(DURABLE_OPTIONS) private readonly options: DurableModuleOptions,
  ) {}

  /**
   * Registers every decorated provider; throws `DurableValidationError` when the module is
   * registered twice, on duplicate names, step-less workflows, a workflow that is not a
   * singleton, and `worker.workflows` naming no registered workflow.
   */
  explore(): void {
    const providers = this.discovery.getProviders();
    const modules = providers.filter((w) => w.metatype === WorkflowExplorer).length;
    if (modules > 1) {
      throw new DurableValidationError(
        `DurableModule is registered ${modules} times in this app (forRoot or forRootAsync imported by more than one module): ` +
          'import it once, in the root module; it is global, so DurableService can be injected in every module',
      );
    }
    for (const wrapper of providers) {
      const { metatype } = wrapper;
      const meta = workflowMetadataOf(metatype);
      if (!meta) continue;
      const type = metatype as Function;
      if (!wrapper.isDependencyTreeStatic() || wrapper.isTransient) {
        // its instance would be a prototype whose constructor never ran (dependencies undefined)
        throw new DurableValidationError(
          `workflow "${meta.name}" (${type.name}) must be a singleton provider: it is ${wrapper.isTransient ? 'transient' : 'request-scoped, or depends on a request-scoped provider'}; ` +
            'a run executes outside any request, so give it and its dependencies the default scope',
        );
      }
      if (!wrapper.instance) continue;
      this.registry.add(this.define(meta, type, wrapper.instance as Record<string, unknown>));
    }
    this.registry.discovered();
    const worker = this.options?.worker;
    const unknown = worker ? (worker.workflows ?? []).filter((n) => !this.registry.find(n)) : [];
    if (unknown.length) {
      throw new DurableValidationError(
        `DurableModule options are invalid:\n  - worker.workflows: no registered workflow is named ${unknown.map((n) => `"${n}"`).join(', ')}`,
      );
    }
  }

  private define(meta: WorkflowMetadata, type: Function, instance: Record<string, unknown>): WorkflowDefinition {
    const { name, options } = meta;
    assertDeclaredOnce(name, type);
    const stepMeta = stepsMetadataOf(type);
    if (stepMeta.length === 0) {
      throw new DurableValidationError(`workflow "${name}" (${type.name}) has no @Step methods: mark at least one method with @Step()`);
    }
    const steps = stepMeta.map(({ method, options: stepOptions }, index): StepDefinition => {
      const what = `workflow "${name}" step "${method}"`;
      const fn = instance[method];
      if (typeof fn !== 'function') throw new DurableValidationError(`${what} is not a method: @Step() marks methods only`);
      if (stepOptions.compensate !== undefined && typeof instance[stepOptions.compensate] !== 'function') {
        throw new DurableValidationError(`${what}: compensate "${stepOptions.compensate}" is not a method of ${type.name}: name a method of the same class`);
      }
      return {
        name: method,
        index,
        retry: resolveRetry(what, options.retry, stepOptions.retry),
        timeoutMs: stepOptions.timeout === undefined ? undefined : toMs(stepOptions.timeout, `${what}: timeout`, MAX_TIMER_MS),
        compensate: stepOptions.compensate,
        run: (fn as (ctx: unknown) => unknown).bind(instance),
      };
    });
    const dupe = steps.find((s, i) => steps.findIndex((o) => o.name === s.name) !== i);
    if (dupe) throw new DurableValidationError(`workflow "${name}" declares step "${dupe.name}" twice: give each @Step method its own name`);
    return {
      name,
      type,
      instance,
      reuse: options.reuse ?? DEFAULT_REUSE,
      onDuplicate: options.onDuplicate ?? DEFAULT_ON_DUPLICATE,
      debounce: options.debounce && {
        periodMs: toMs(options.debounce.period, `workflow "${name}": debounce.period`, MAX_SPAN_MS),
        timeoutMs: options.debounce.timeout === undefined ? undefined : toMs(options.debounce.timeout, `workflow "${name}": debounce.timeout`, MAX_SPAN_MS),
        merge: options.debounce.merge ?? 'last',
      },
      timeoutMs: options.timeout === undefined ? undefined : toMs(options.timeout, `workflow "${name}": timeout`, MAX_TIMER_MS),
      priority: options.priority ?? 0,
      retry: resolveRetry(`workflow "${name}"`, options.retry),
      controls: controlsOf(name, options),
      steps,
    };
  }
}
