/**
 * A start refused for a reason the person starting the app acts on (another app holds the data
 * folder, a bad setting): its message says everything, so main.ts prints it without a stack.
 */
export class StartupRefused extends Error {
  override readonly name = 'StartupRefused';
}

/** What main.ts prints when the app could not start: a refusal's message; for anything else, its stack. */
export function startupFailure(error: unknown): string {
  if (error instanceof StartupRefused) return error.message;
  return error instanceof Error ? (error.stack ?? error.message) : String(error);
}
