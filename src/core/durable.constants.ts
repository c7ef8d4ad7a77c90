/** Logger context of everything this module logs. */
export const LOG_CONTEXT = 'Durable';
