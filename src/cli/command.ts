import type { ParsedArgs } from './args';
import type { CliConnection } from './cli-connection';

/** What a command prints: `json` with `--json` (one document), else `text`. */
export interface Output {
  json: unknown;
  text: string;
  /** The engine did not do what was asked (an input ignored, an event dropped): printed all the same, exit 1. */
  refused?: boolean;
}

/** What a command runs with. */
export interface CommandContext {
  /** The arguments after the command's name, checked against {@link Command.args}. */
  args: string[];
  parsed: ParsedArgs;
  /** Opened on first use: a command checks its arguments before it connects. */
  connection: CliConnection;
}

/** One command of the operator CLI. */
export interface Command {
  /** Its words, e.g. `runs list`. */
  name: string;
  /** Positional arguments: `<id>` required, `[<json>]` optional (last). */
  args: string[];
  /** Those of its options that must be given (as spelt in `options`, e.g. `--from <node>`): shown in its usage line. */
  required?: string[];
  /** Its own options (beyond `--url`, `--schema`, `--json`, `--help`), with what each does. */
  options: Record<string, string>;
  summary: string;
  run(ctx: CommandContext): Promise<Output>;
}
