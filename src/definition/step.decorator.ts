import type { StepOptions } from '../options/workflow-options.interface';
import { STEPS_METADATA } from './metadata.constants';

/** One `@Step` as recorded on its class, in declaration order. */
export interface StepMetadata {
  method: string;
  options: StepOptions;
}

/** Marks a method of a `@Workflow` class as its next step. Metadata only. */
export function Step(options: StepOptions = {}): MethodDecorator {
  return (target, property) => {
    const ctor = target.constructor;
    const inherited: StepMetadata[] = Reflect.getMetadata(STEPS_METADATA, ctor) ?? [];
    Reflect.defineMetadata(STEPS_METADATA, [...inherited, { method: String(property), options }], ctor);
  };
}
