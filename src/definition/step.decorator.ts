import type { StepOptions } from '../options/workflow-options.interface';
import { STEP_OPTION_NAMES } from '../options/option-names';
import { RETRY_OPTION_NAMES } from '../domain/retry.policy';
import { assertValid, unknownOptionProblems } from '../domain/validation';
import { STEPS_METADATA } from './metadata.constants';

/** One `@Step` as recorded on its class, in declaration order. */
export interface StepMetadata {
  method: string;
  options: StepOptions;
}

/**
 * Marks a method of a `@Workflow` class as its next step. Metadata only; a misspelt option name
 * throws `DurableValidationError` when the class is defined (the values are checked at startup).
 */
export function Step(options: StepOptions = {}): MethodDecorator {
  return (target, property) => {
    const ctor = target.constructor;
    assertValid(`@Step() on ${ctor.name}.${String(property)}`, [
      ...unknownOptionProblems(options, STEP_OPTION_NAMES),
      ...unknownOptionProblems(options?.retry, RETRY_OPTION_NAMES, 'retry.'),
    ]);
    const inherited: StepMetadata[] = Reflect.getMetadata(STEPS_METADATA, ctor) ?? [];
    Reflect.defineMetadata(STEPS_METADATA, [...inherited, { method: String(property), options }], ctor);
  };
}
