import { UsageError } from '../errors';
import { MIN_NODE_TIMEOUT_MS, SCHEMA_NAME } from '../options/option-limits';
import { durationOption, parseArgs, stringOption, type ParsedArgs } from './args';
import { UNDEFINED_TABLE } from '../store/db';
import { CliConnection } from './cli-connection';
import type { Command } from './command';
import { overviewCommands } from './overview.commands';
import { runsCommands } from './runs.commands';
import { flowsCommands } from './flows.commands';
import { packageVersion } from './version';

/** Every command, in the order the help lists them. */
export const COMMANDS: Command[] = [overviewCommands[0], ...runsCommands, ...flowsCommands, ...overviewCommands.slice(1)];

/** Where the CLI writes, and its environment. */
export interface CliIo {
  stdout(text: string): void;
  stderr(text: string): void;
  env: NodeJS.ProcessEnv;
}

/** How long a command waits for the database to answer its connection, by default. */
export const CONNECT_TIMEOUT_MS = 10_000;

const GLOBAL_OPTIONS: Record<string, string> = {
  '--url <url>': 'the database (default: DATABASE_URL)',
  '--schema <name>': 'the module’s schema (default: durable)',
  '--connect-timeout <duration>': `give up when the database does not answer within this (default ${CONNECT_TIMEOUT_MS / 1000}s)`,
  '--transaction-pooler':
    'the URL is a pooler in transaction mode (PgBouncer pool_mode = transaction): no session settings, no named prepared statements (the module option transactionPooler)',
  '--json': 'print one JSON document for scripts instead of tables',
  '--help': 'this help',
  '--version': 'print the version of nestjs-durable',
};

/** What pg takes as a connection string: a postgres URL, a `socket:` URL or a socket directory. */
const CONNECTION_STRING = /^(?:postgres(?:ql)?:\/\/|socket:|\/)/i;

/** An option's name as parsed: `--limit <n>` → `limit`. */
const optionName = (spelt: string) => spelt.split(' ')[0].slice(2);

/** The options, of any command, that take a value (`--limit <n>`, not `--json`). */
const VALUED: ReadonlySet<string> = new Set(
  [...COMMANDS.flatMap((c) => Object.keys(c.options)), ...Object.keys(GLOBAL_OPTIONS)].filter((o) => o.includes(' <')).map(optionName),
);

/** Exit codes: done, refused or failed, bad usage. */
export const EXIT = { ok: 0, failed: 1, usage: 2 } as const;

const usageOf = (c: Command) => `nestjs-durable ${c.name}${[...c.args, ...(c.required ?? [])].map((a) => ` ${a}`).join('')}`;

function optionLines(options: Record<string, string>): string[] {
  const width = Math.max(...Object.keys(options).map((o) => o.length));
  return Object.entries(options).map(([o, what]) => `  ${o.padEnd(width)}  ${what}`);
}

/** The help of one command, or of the whole CLI. */
export function helpText(command?: Command): string {
  if (command) {
    return [`usage: ${usageOf(command)} [options]`, '', command.summary, '', 'options:', ...optionLines({ ...command.options, ...GLOBAL_OPTIONS })].join('\n');
  }
  const groups = [...new Set(COMMANDS.filter((c) => c.name.includes(' ')).map((c) => c.name.split(' ')[0]))];
  return listHelp('<command>', COMMANDS, [
    'nestjs-durable <command> --help shows the options of a command;',
    `nestjs-durable <group> --help the commands of a group (${groups.join(', ')}).`,
    'An option is given once: twice is bad usage.',
    'Exit status: 0 done, 1 refused or failed, 2 bad usage.',
  ]);
}

/** A help listing `commands` (run as `nestjs-durable <what> …`) and the options they all take, then `footer`. */
function listHelp(what: string, commands: Command[], footer: string[]): string {
  const width = Math.max(...commands.map((c) => usageOf(c).length));
  return [
    `usage: nestjs-durable ${what} [options]`,
    '',
    'commands:',
    ...commands.map((c) => `  ${usageOf(c).padEnd(width)}  ${c.summary}`),
    '',
    'options of every command:',
    ...optionLines(GLOBAL_OPTIONS),
    '',
    ...footer,
  ].join('\n');
}

/** The commands whose name starts with the word `group` (`runs` → `runs list`, `runs get`, …); none for a command's own name (`status`). */
function commandsOf(group: string): Command[] {
  return COMMANDS.filter((c) => c.name.startsWith(`${group} `));
}

/** The help of a group of commands (`runs`, `keys`, …): its commands and the options they share. */
function groupHelpText(group: string): string {
  return listHelp(`${group} <command>`, commandsOf(group), [`nestjs-durable ${group} <command> --help shows the options of a command.`]);
}

/** A command line that names a group of commands but none of them: what to say about it. */
function groupUsage(parsed: ParsedArgs): UsageError | undefined {
  const [group, sub] = parsed.words;
  const commands = group === undefined ? [] : commandsOf(group);
  if (commands.length === 0) return undefined;
  const names = commands.map((c) => c.name.slice(group.length + 1)).join(', ');
  const help = `nestjs-durable ${group} --help lists them`;
  return new UsageError(
    sub === undefined ? `${group} needs a command: ${names} (${help})` : `unknown command "${parsed.words.join(' ')}": ${group} has ${names} (${help})`,
  );
}

/** The command named by the first words of the line, and its arguments. */
function findCommand(parsed: ParsedArgs): { command: Command; args: string[] } | undefined {
  for (const command of COMMANDS) {
    const words = command.name.split(' ');
    if (words.every((w, i) => parsed.words[i] === w)) return { command, args: parsed.words.slice(words.length) };
  }
  return undefined;
}

/**
 * Refuses options the command does not take (first: a misspelt option explains the rest), then an
 * option given twice (which of the values was meant?), then arguments.
 */
function checkUsage(command: Command, args: string[], parsed: ParsedArgs): void {
  const known = new Set([...Object.keys(command.options), ...Object.keys(GLOBAL_OPTIONS)].map(optionName));
  for (const name of parsed.options.keys()) if (!known.has(name)) throw new UsageError(`${command.name} has no option --${name}`);
  const [twice] = parsed.repeated;
  if (twice !== undefined) throw new UsageError(`--${twice} is given more than once: ${command.name} takes it once`);
  const missing = (command.required ?? []).find((o) => !parsed.options.has(optionName(o)));
  if (missing) throw new UsageError(`${command.name} needs ${missing}: ${command.options[missing]}`);
  const required = command.args.filter((a) => a.startsWith('<')).length;
  if (args.length < required || args.length > command.args.length) {
    throw new UsageError(
      `${command.name} takes ${command.args.join(' ') || 'no arguments'}, got ${args.length ? args.map((a) => JSON.stringify(a)).join(' ') : 'none'}`,
    );
  }
}

/**
 * One line naming the error's code: `error <code>: <message>` (a durable error's code, else
 * Postgres' SQLSTATE or Node's error code). A missing table names the `schema` read and both ways out.
 */
function errorLine(err: unknown, schema?: string): string {
  const code = (err as { code?: unknown } | null)?.code;
  let message = err instanceof Error ? err.message : String(err);
  if (code === UNDEFINED_TABLE && schema !== undefined) {
    message += ` (schema "${schema}" has no tables of the module: give the schema your app uses with --schema <name>, or apply the migrations to this one: nestjs-durable migrate --help)`;
  }
  return `error ${typeof code === 'string' || typeof code === 'number' ? code : 'failed'}: ${message.replace(/\s*\n\s*/g, ' ')}`;
}

/** Runs one command line; resolves with the exit code. */
export async function runCli(argv: string[], io: CliIo): Promise<number> {
  let parsed: ParsedArgs;
  let found: ReturnType<typeof findCommand>;
  let nodeTimeoutMs: number | undefined;
  let schema: string;
  let connectTimeoutMs: number;
  try {
    parsed = parseArgs(argv, VALUED);
    if (parsed.options.has('version')) {
      io.stdout(packageVersion());
      return EXIT.ok;
    }
    found = findCommand(parsed);
    if (!found) {
      if (parsed.words.length === 0 && parsed.options.has('help')) {
        io.stdout(helpText());
        return EXIT.ok;
      }
      if (parsed.words.length === 1 && parsed.options.has('help') && commandsOf(parsed.words[0]).length) {
        io.stdout(groupHelpText(parsed.words[0]));
        return EXIT.ok;
      }
      const inGroup = groupUsage(parsed);
      if (inGroup) throw inGroup;
      throw new UsageError(
        parsed.words.length
          ? `unknown command "${parsed.words.join(' ')}" (nestjs-durable --help lists them)`
          : 'no command given (nestjs-durable --help lists them)',
      );
    }
    if (parsed.options.has('help')) {
      io.stdout(helpText(found.command));
      return EXIT.ok;
    }
    checkUsage(found.command, found.args, parsed);
    nodeTimeoutMs = durationOption(parsed, 'node-timeout', MIN_NODE_TIMEOUT_MS); // as the module takes it
    connectTimeoutMs = durationOption(parsed, 'connect-timeout') ?? CONNECT_TIMEOUT_MS;
    schema = stringOption(parsed, 'schema') ?? 'durable';
    // quoted into statements (migrate uses no module, which would check it)
    if (!SCHEMA_NAME.pattern.test(schema) || schema.length > SCHEMA_NAME.maxLength) {
      throw new UsageError(`--schema: ${SCHEMA_NAME.message} of at most ${SCHEMA_NAME.maxLength} characters, got ${JSON.stringify(schema)}`);
    }
  } catch (err) {
    io.stderr(errorLine(err));
    return EXIT.usage;
  }
  const url = stringOption(parsed, 'url') ?? io.env.DATABASE_URL;
  if (!url) {
    io.stderr(errorLine(new UsageError('no database: give --url postgres://… or set DATABASE_URL')));
    return EXIT.usage;
  }
  if (!CONNECTION_STRING.test(url)) {
    // not echoed: it may hold a password
    const given = stringOption(parsed, 'url') === undefined ? 'DATABASE_URL' : '--url';
    io.stderr(errorLine(new UsageError(`${given} must be a postgres:// or postgresql:// URL (postgres://user:password@host:5432/database)`)));
    return EXIT.usage;
  }
  const connection = new CliConnection({ url, schema, nodeTimeoutMs, connectTimeoutMs, transactionPooler: parsed.options.has('transaction-pooler') });
  try {
    const out = await found.command.run({ args: found.args, parsed, connection });
    io.stdout(parsed.options.has('json') ? JSON.stringify(out.json, null, 2) : out.text);
    return out.refused ? EXIT.failed : EXIT.ok;
  } catch (err) {
    io.stderr(errorLine(connection.told(err), schema));
    return err instanceof UsageError ? EXIT.usage : EXIT.failed;
  } finally {
    await connection.close().catch(() => undefined);
  }
}
