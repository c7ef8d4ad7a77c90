import { Injectable } from '@nestjs/common';
import { DiscoveryService, Reflector } from '@nestjs/core';
import { STEPS_METADATA, WORKFLOW_METADATA } from './metadata.constants';
import type { StepMetadata } from './step.decorator';
import type { WorkflowMetadata } from './workflow.decorator';
import { toMs } from '../domain/duration';
import { resolveRetry } from '../domain/retry.policy';
import { DEFAULT_ON_DUPLICATE, DEFAULT_REUSE } from '../domain/keys.policy';
import type { StepDefinition, WorkflowDefinition } from './workflow-definition';
import { WorkflowRegistry } from './workflow.registry';

/** Finds every `@Workflow` provider in the app and registers it with its steps. */
@Injectable()
export class WorkflowExplorer {
  constructor(
    private readonly discovery: DiscoveryService,
    private readonly reflector: Reflector,
    private readonly registry: WorkflowRegistry,
  ) {}

  /** Registers every decorated provider; throws on duplicate names or step-less workflows. */
  explore(): void {
    for (const wrapper of this.discovery.getProviders()) {
      const { instance, metatype } = wrapper;
      if (!instance || !metatype || typeof metatype !== 'function') continue;
      const meta = this.reflector.get<WorkflowMetadata | undefined>(WORKFLOW_METADATA, metatype);
      if (!meta) continue;
      this.registry.add(this.define(meta, metatype, instance as Record<string, unknown>));
    }
  }

  private define(meta: WorkflowMetadata, type: Function, instance: Record<string, unknown>): WorkflowDefinition {
    const { name, options } = meta;
    const stepMeta: StepMetadata[] = Reflect.getMetadata(STEPS_METADATA, type) ?? [];
    if (stepMeta.length === 0) {
      throw new Error(`nestjs-durable: workflow "${name}" (${type.name}) has no @Step methods`);
    }
    const steps = stepMeta.map(({ method, options: stepOptions }, index): StepDefinition => {
      const what = `workflow "${name}" step "${method}"`;
      const fn = instance[method];
      if (typeof fn !== 'function') throw new Error(`nestjs-durable: ${what} is not a method`);
      if (stepOptions.compensate !== undefined && typeof instance[stepOptions.compensate] !== 'function') {
        throw new Error(`nestjs-durable: ${what}: compensate "${stepOptions.compensate}" is not a method of ${type.name}`);
      }
      return {
        name: method,
        index,
        retry: resolveRetry(what, options.retry, stepOptions.retry),
        timeoutMs: stepOptions.timeout === undefined ? undefined : toMs(stepOptions.timeout, `${what}: timeout`),
        compensate: stepOptions.compensate,
        run: (fn as (ctx: unknown) => unknown).bind(instance),
      };
    });
    const dupe = steps.find((s, i) => steps.findIndex((o) => o.name === s.name) !== i);
    if (dupe) throw new Error(`nestjs-durable: workflow "${name}" declares step "${dupe.name}" twice`);
    return {
      name,
      type,
      instance,
      reuse: options.reuse ?? DEFAULT_REUSE,
      onDuplicate: options.onDuplicate ?? DEFAULT_ON_DUPLICATE,
      debounce: options.debounce && {
        periodMs: toMs(options.debounce.period, `workflow "${name}": debounce.period`),
        timeoutMs: options.debounce.timeout === undefined ? undefined : toMs(options.debounce.timeout, `workflow "${name}": debounce.timeout`),
      },
      timeoutMs: options.timeout === undefined ? undefined : toMs(options.timeout, `workflow "${name}": timeout`),
      steps,
    };
  }
}
