/** Logger context of everything this module logs. */
export const LOG_CONTEXT = 'Durable';

/** Injection token of the module options with every default applied (`ResolvedOptions`). */
export const RESOLVED_OPTIONS = Symbol('nestjs-durable:resolved-options');

/** The channel a schema's workers LISTEN on for new runs. */
export const channelOf = (schema: string): string => `durable_${schema}`;
