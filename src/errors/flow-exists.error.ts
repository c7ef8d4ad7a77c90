import { DurableValidationError } from './validation.error';

/** `startFlow` with a custom flow id that another flow already has (a `DurableValidationError`). */
export class FlowExistsError extends DurableValidationError {
  constructor(readonly flowId: string) {
    super(`startFlow: a flow with id "${flowId}" already exists; flow ids must be unique`);
  }
}
