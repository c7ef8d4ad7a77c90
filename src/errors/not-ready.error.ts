import { DurableError } from './durable.error';

/**
 * The module was used before it finished starting: its workflows are discovered, and its connection
 * opened, when the Nest app initialises (`app.init()`, `app.listen()`, `NestFactory.createApplicationContext`).
 */
export class NotReadyError extends DurableError {
  readonly code = 'not_ready' as const;

  constructor(what: string) {
    super(
      `${what}: the durable module has not finished starting (it discovers the workflows and connects when the app initialises): ` +
        'call it after app.init() (or app.listen()), e.g. from onApplicationBootstrap rather than from a constructor or onModuleInit',
    );
  }
}
